#!/usr/bin/env python3
"""CPU model of how problems 32 and 40 react to the GEMM roundings a GPU may do (issue 29).

A bf16 GEMM on cuBLAS accumulates in fp32; under CUBLAS_DEFAULT_MATH a split-K algorithm may also add
its partial sums in bf16 ("reduced-precision reduction"), rounding each partial sum. This script
builds inputs shaped and drawn as PKB's (M = N = 1024, W = 1, bf16; its own seed) and counts the
elements that fail PKB's rule (allclose, atol = rtol = 1e-2) against the exact computation rounded once
per torch op, when one GEMM instead
  - splits K into s parts rounded to bf16 and adds them in bf16 (split-K, reduced precision), or
  - accumulates in fp32 in one order or another (what cuBLAS does with the reductions kept in fp32).
Run: python3 tools/gpu/split_k_sensitivity.py   (needs torch; CPU only; about a minute)
"""
import torch

F64 = torch.float64


def r(t):
    """torch's rounding of a result to bf16, read back in float64."""
    return t.to(torch.bfloat16).to(F64)


def gemm(a, w_t, bias=None, split=1):
    """r(a @ w_t + bias): exact and rounded once, or split-K with each partial sum rounded to bf16."""
    if split == 1:
        y = a @ w_t
        return r(y + bias if bias is not None else y)
    step = a.shape[1] // split
    acc = None
    for s in range(split):
        part = r(a[:, s * step:(s + 1) * step] @ w_t[s * step:(s + 1) * step, :])
        acc = part if acc is None else r(acc + part)
    return r(acc + bias) if bias is not None else acc


def gemm_fp32(a, w_t, bias=None, split=1):
    """fp32 accumulation (split parts summed in fp32: another order), rounded once."""
    step = a.shape[1] // split
    acc = sum(a[:, s * step:(s + 1) * step].float() @ w_t[s * step:(s + 1) * step, :].float() for s in range(split))
    return r((acc + bias.float() if bias is not None else acc).double())


def failing(candidate, reference):
    bad = ~torch.isclose(candidate.float(), reference.float(), atol=1e-2, rtol=1e-2)
    rows = int(bad.reshape(bad.shape[0], -1).any(1).sum()) if bad.dim() > 1 else 0
    return f"{int(bad.sum())} elements in {rows} rows, max abs {float((candidate - reference).abs().max()):.3g}"


def problem_32():
    torch.manual_seed(0)
    m = n = 1024
    inter, rank, experts = 128, 8, 8
    x = r(torch.randn(m, n, dtype=F64))
    router_w, router_b = r(torch.randn(experts, n, dtype=F64)), r(torch.randn(experts, dtype=F64))
    def uniform(shape, fan_in):  # nn.Linear's default U(±1/√fan_in)
        return r((torch.rand(*shape, dtype=F64) * 2 - 1) / fan_in ** 0.5)
    gw, gb, uw, ub = uniform((inter, n), n), uniform((inter,), n), uniform((inter, n), n), uniform((inter,), n)
    dw, db = uniform((n, inter), inter), uniform((n,), inter)
    ag, bg, au, bu, ad, bd = (r(torch.randn(*s, dtype=F64)) for s in
                              [(rank, n), (inter, rank), (rank, n), (inter, rank), (rank, inter), (n, rank)])

    def mlp(lin, lora_a_split=1):
        g = r(lin(x, gw.T, gb) + lin(lin(x, ag.T, None, lora_a_split), bg.T))
        u = r(lin(x, uw.T, ub) + lin(lin(x, au.T, None, lora_a_split), bu.T))
        h = r(r(g / (1 + torch.exp(-g))) * u)
        return r(lin(h, dw.T, db) + lin(lin(h, ad.T), bd.T))

    def weights(lin, split=1):
        return torch.topk(r(torch.softmax(lin(x, router_w.T, router_b, split), -1)), 2, -1)[0]

    def combine(y, w):
        return r(r(y * w[:, :1]) + r(y * w[:, 1:2]))

    y, w = mlp(gemm), weights(gemm)
    reference = combine(y, w)
    print(f"32 (|out| median {float(reference.abs().median()):.3g}):")
    for split in (2, 4, 8):
        print(f"  router logits split-K {split}, bf16 partial sums: {failing(combine(y, weights(gemm, split)), reference)}")
        print(f"  router logits split-K {split}, fp32 partial sums: {failing(combine(y, weights(gemm_fp32, split)), reference)}")
    print(f"  LoRA x·Aᵀ split-K 4, bf16 partial sums:  {failing(combine(mlp(gemm, 4), w), reference)}")
    print(f"  every MLP GEMM in fp32 (one order):       {failing(combine(mlp(gemm_fp32), w), reference)}")


def problem_40():
    torch.manual_seed(1)
    rows, d_in, hidden, d_out = 1024, 256, 512, 256
    x, y = r(torch.randn(rows, d_in, dtype=F64)), r(torch.randn(rows, d_out, dtype=F64))
    w1, b1 = r(torch.randn(hidden, d_in, dtype=F64)), r(torch.randn(hidden, dtype=F64))
    w2, b2 = r(torch.randn(d_out, hidden, dtype=F64)), r(torch.randn(d_out, dtype=F64))
    h = torch.relu(gemm(x, w1.T, b1))
    out = gemm(h, w2.T, b2)
    d_out_ = r(r(torch.tensor(2.0 / out.numel(), dtype=F64)) * r(out - y))
    d_h = gemm(d_out_, w2) * (h > 0)
    print("40 (first moment m = r(0.1 g) of the weight gradients, step 1):")
    for split in (4, 8, 16):
        for name, a, b in (("W1", d_h.T, x), ("W2", d_out_.T, h)):
            exact, split_k = r(0.1 * gemm(a, b)), r(0.1 * gemm(a, b, None, split))
            print(f"  g{name} split-K {split}, bf16 partial sums: {failing(split_k, exact)}")
    for name, a, b in (("W1", d_h.T, x), ("W2", d_out_.T, h)):
        print(f"  g{name} in fp32 (one order):           {failing(r(0.1 * gemm_fp32(a, b)), r(0.1 * gemm(a, b)))}")


if __name__ == "__main__":
    problem_32()
    problem_40()
