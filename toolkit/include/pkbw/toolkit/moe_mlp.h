// The expert MLP of PKB's MoE problems (31, 32, 49-51): one SiLU-GLU MLP with biases per rank,
// optionally with rank-r LoRA on its three projections (32), applied to every row the rank received.
// The pointers are device memory for moe_mlp.cuh and unused by moe_mlp_host.h (which reads inputs by
// index); this header only names the shapes and the operands, shared by both.
//
// Without LoRA (PKB's expert_forward):
//     g = r(x·Wgᵀ + bg)   u = r(x·Wuᵀ + bu)   h = r(r(silu(g)) · u)   y = r(h·Wdᵀ + bd)
// With LoRA (PKB 32's expert_forward_lora; A [r, in], B [out, r]):
//     g = r(r(x·Wgᵀ + bg) + r(r(x·Agᵀ)·Bgᵀ))       u likewise with Au, Bu
//     y = r(r(h·Wdᵀ + bd) + r(r(h·Adᵀ)·Bdᵀ))
// r() is the rounding to the dtype where torch stores a tensor; every GEMM accumulates in fp32 (cuBLAS)
// or exactly (the host oracle) and adds its bias before its one rounding.
#pragma once

namespace pkbw::tk {

struct GluMlp {
    long long hidden = 0; // N: x and y are [rows, hidden]
    long long inter = 0;  // the intermediate width (PKB: 128)
    int lora_rank = 0;    // 0: no LoRA
    // nn.Linear parameters: gate/up weight [inter, hidden], bias [inter]; down weight [hidden, inter],
    // bias [hidden]. Biases may be null (none).
    const void* gate_w = nullptr;
    const void* gate_b = nullptr;
    const void* up_w = nullptr;
    const void* up_b = nullptr;
    const void* down_w = nullptr;
    const void* down_b = nullptr;
    // LoRA factors (lora_rank > 0): gate_a/up_a [r, hidden], gate_b/up_b [inter, r], down_a [r, inter],
    // down_b [hidden, r].
    const void* lora_gate_a = nullptr;
    const void* lora_gate_b = nullptr;
    const void* lora_up_a = nullptr;
    const void* lora_up_b = nullptr;
    const void* lora_down_a = nullptr;
    const void* lora_down_b = nullptr;
};

} // namespace pkbw::tk
