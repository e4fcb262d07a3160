def solution(x):
    return x.clone()
