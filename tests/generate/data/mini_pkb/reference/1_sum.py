def solution(t):
    return {'sum': t}
