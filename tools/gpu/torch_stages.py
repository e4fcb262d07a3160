#!/usr/bin/env python3
"""Runs the GEMM and elementwise stages of problems 32 and 40-47 (W = 1, bf16, M = N = 1024) in PyTorch on
the GPU, as PKB's references do them, and writes every stage's inputs and output for
tools/gpu/torch_stage_check.cu, which runs the toolkit's device code on the same inputs and compares bit
for bit (issue 29). Each stage gets PyTorch's own output of the stage before, so a stage that differs is
found in isolation, on the data the problem really produces.

OUT_DIR/cases.txt has one line per stage:
  gemm NAME m n k trans_a trans_b bias   tk::Gemm's terms: C[m, n] = op(A)·op(B) (+ bias[n]); files
                                         NAME.a, NAME.b, NAME.bias, NAME.c
  add NAME count                         r(a + b) (torch's + of two bf16 tensors); NAME.a, NAME.b, NAME.c
  silu_mul NAME count                    r(r(silu(g)) · u); NAME.a (g), NAME.b (u), NAME.c
  router NAME tokens experts top_k       softmax in bf16 then top-k of the logits NAME.a; NAME.c (the
                                         weights, bf16 [tokens, k])
Files are raw little-endian bf16, row-major. Usage: python3 tools/gpu/torch_stages.py OUT_DIR
"""
import os
import sys

import torch
import torch.nn.functional as F

BF = torch.bfloat16


class Writer:
    def __init__(self, out):
        self.out, self.lines = out, []

    def save(self, name, **tensors):
        for suffix, t in tensors.items():
            t.detach().contiguous().view(torch.int16).cpu().numpy().tofile(os.path.join(self.out, f"{name}.{suffix}"))

    def gemm(self, name, a, b, bias, trans_a, trans_b, c):
        m, k = (a.shape[1], a.shape[0]) if trans_a else a.shape
        n = b.shape[0] if trans_b else b.shape[1]
        self.save(name, a=a, b=b, c=c, **({"bias": bias} if bias is not None else {}))
        self.lines.append(f"gemm {name} {m} {n} {k} {int(trans_a)} {int(trans_b)} {int(bias is not None)}")

    def linear(self, name, x, w, bias=None):
        """F.linear(x, w, bias) as the problem runs it, recorded as a stage; returns PyTorch's output."""
        y = F.linear(x, w, bias)
        self.gemm(name, x, w, bias, False, True, y)
        return y

    def elementwise(self, kind, name, a, b, c):
        self.save(name, a=a, b=b, c=c)
        self.lines.append(f"{kind} {name} {a.numel()}")


def uniform(gen, shape, fan_in):
    return ((torch.rand(shape, generator=gen, device="cuda") * 2 - 1) / fan_in ** 0.5).to(BF)


def normal(gen, *shape):
    return torch.randn(shape, generator=gen, device="cuda").to(BF)


def problem_32(w, gen, m=1024, n=1024, inter=128, rank=8, experts=8):
    x = normal(gen, m, n)
    logits = w.linear("p32_router", x, normal(gen, experts, n), normal(gen, experts))
    weights, _ = torch.topk(torch.softmax(logits, dim=-1), 2, dim=-1)
    w.save("p32_softmax_topk", a=logits, c=weights)
    w.lines.append(f"router p32_softmax_topk {m} {experts} 2")
    rows = torch.cat([x, x])  # at W = 1 every token reaches the one MLP twice (top-2); order does not matter
    gw, gb, uw, ub = uniform(gen, (inter, n), n), uniform(gen, (inter,), n), uniform(gen, (inter, n), n), uniform(gen, (inter,), n)
    dw, db = uniform(gen, (n, inter), inter), uniform(gen, (n,), inter)
    ag, bg, au, bu = normal(gen, rank, n), normal(gen, inter, rank), normal(gen, rank, n), normal(gen, inter, rank)
    ad, bd = normal(gen, rank, inter), normal(gen, n, rank)

    def projection(tag, inp, weight, bias, lora_a, lora_b):
        base = w.linear(f"p32_{tag}", inp, weight, bias)
        delta = w.linear(f"p32_{tag}_lora_b", w.linear(f"p32_{tag}_lora_a", inp, lora_a), lora_b)
        total = base + delta
        w.elementwise("add", f"p32_{tag}_add", base, delta, total)
        return total

    gate = projection("gate", rows, gw, gb, ag, bg)
    up = projection("up", rows, uw, ub, au, bu)
    h = F.silu(gate) * up
    w.elementwise("silu_mul", "p32_silu_mul", gate, up, h)
    projection("down", h, dw, db, ad, bd)


def problem_40(w, gen, tag, rows=1024, d_in=256, hidden=512, d_out=256):
    """PKB 40's MLP step at N = 1024 (41, 42 and 47 have the same sizes there: P = 262,912 divides every
    W), parameters standard normal as PKB draws them: forward, mse_loss, the GEMMs autograd runs. The
    checker reports, for fc1, how many pre-activations change sign (> 0 or not): ReLU-mask flips."""
    x, y = normal(gen, rows, d_in), normal(gen, rows, d_out)
    w1, b1 = normal(gen, hidden, d_in).requires_grad_(), normal(gen, hidden).requires_grad_()
    w2, b2 = normal(gen, d_out, hidden).requires_grad_(), normal(gen, d_out).requires_grad_()
    pre = F.linear(x, w1, b1)
    pre.retain_grad()
    h = F.relu(pre)
    h.retain_grad()
    out = F.linear(h, w2, b2)
    out.retain_grad()
    F.mse_loss(out, y).backward()
    d_o, d_pre = out.grad, pre.grad
    with torch.no_grad():
        w.gemm(f"{tag}_fc1", x, w1, b1, False, True, pre)
        w.gemm(f"{tag}_fc2", h, w2, b2, False, True, out)
        w.gemm(f"{tag}_dh", d_o, w2, None, False, False, h.grad)  # grad.mm(W2) (mm_mat1_backward)
        w.gemm(f"{tag}_gw2", d_o, h, None, True, False, w2.grad)  # grad.t().mm(h) (mm_mat2_backward)
        w.gemm(f"{tag}_gw1", d_pre, x, None, True, False, w1.grad)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    gen = torch.Generator(device="cuda").manual_seed(29)
    w = Writer(out)
    problem_32(w, gen)
    for draw in range(3):  # three draws of 40-47's step: more pre-activations near 0
        problem_40(w, gen, f"p40_{draw}")
    torch.cuda.synchronize()
    with open(os.path.join(out, "cases.txt"), "w") as f:
        f.write("\n".join(w.lines) + "\n")
    print(f"torch_stages: {len(w.lines)} stages in {out} (torch {torch.__version__}, CUDA {torch.version.cuda})")


if __name__ == "__main__":
    main()
