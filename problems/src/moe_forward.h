// The descriptor shared by PKB's fused MoE forward problems (31 fused_moe_fwd, 32 its LoRA variant,
// 49 moe_ep_balanced, 50 moe_ep_wide, 51 moe_ep_narrow): the same arguments, inputs and output, with
// the expert count, top-k and the expert-parallel group size as functions of W.
//
// PKB's arguments, in order (the tensor leaves the cross-check replaces, a module's weight then bias):
//   hidden_states [M, N]; gate_weight [E, N]; gate_bias [E] (the router, standard normal);
//   gate_proj, up_proj = nn.Linear(N, 128); down_proj = nn.Linear(128, N) (torch's default init:
//   weight and bias U(±1/√fan_in), fan_in = in_features); with LoRA (32) lora_gate_A [8, N],
//   lora_gate_B [128, 8], lora_up_A [8, N], lora_up_B [128, 8], lora_down_A [8, 128], lora_down_B [N, 8]
//   (standard normal); then num_experts, top_k (params) and group (None).
// Every rank draws its own inputs (PKB seeds per rank), so every rank's router and MLP differ.
// Output: [M, N] in the dtype, this rank's tokens after the round trip.
#pragma once

#include "pkbw/core/tie_rows.h"
#include "pkbw/toolkit/moe_inputs.h"
#include "pkbw/toolkit/moe_router_host.h"
#include "problem_util.h"

#include <cmath>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace pkbw::problems {

inline constexpr std::int64_t kMoeInterDim = 128;
inline constexpr std::int64_t kMoeLoraRank = 8;

struct MoeForwardRules {
    std::function<int(int)> experts;                             // E for world size W
    std::function<int(int)> top_k;                               // k for W
    std::function<int(int)> ep_size;                             // the EP group size for W (W: the world)
    std::function<std::optional<std::string>(int)> refuse_world; // why W is not allowed, or nullopt
    bool lora = false;
};

// 31's and 32's layout: 8 experts whatever W, top-2, EP over the world; W must divide 8.
inline MoeForwardRules eight_expert_rules(bool lora) {
    constexpr int kExperts = 8;
    MoeForwardRules r;
    r.experts = [](int) { return kExperts; };
    r.top_k = [](int) { return 2; };
    r.ep_size = [](int w) { return w; };
    r.refuse_world = [](int w) -> std::optional<std::string> {
        if (kExperts % w != 0) {
            return "W must divide the 8 experts (got W = " + std::to_string(w) + ")";
        }
        return std::nullopt;
    };
    r.lora = lora;
    return r;
}

class MoeForwardProblem : public BasicProblem {
public:
    MoeForwardProblem(ProblemInfo info, MoeForwardRules rules)
        : BasicProblem(std::move(info))
        , rules_(std::move(rules)) {}

    int experts(const ProblemConfig& c) const { return rules_.experts(c.world_size); }
    int top_k(const ProblemConfig& c) const { return rules_.top_k(c.world_size); }
    int ep_size(const ProblemConfig& c) const { return rules_.ep_size(c.world_size); }

    std::optional<std::string> check_config(const ProblemConfig& c) const override {
        if (auto common = check_common(c, info())) {
            return common;
        }
        if (auto refused = check_world(c.world_size)) {
            return refused;
        }
        if (experts(c) > 256) {
            return info().stem + ": more than 256 experts (W = " + std::to_string(c.world_size) + ")";
        }
        return std::nullopt;
    }

    std::optional<std::string> check_world(int world_size) const override {
        if (auto refused = rules_.refuse_world(world_size)) {
            return info().stem + ": " + *refused;
        }
        return std::nullopt;
    }

    std::vector<TensorSpec> input_specs(const ProblemConfig& c, int) const override {
        const std::int64_t e = experts(c), n = c.n, i = kMoeInterDim, r = kMoeLoraRank;
        std::vector<TensorSpec> specs = {
            {"hidden_states", c.dtype, {c.m, n}}, {"gate_weight", c.dtype, {e, n}},
            {"gate_bias", c.dtype, {e}},          {"gate_proj_weight", c.dtype, {i, n}},
            {"gate_proj_bias", c.dtype, {i}},     {"up_proj_weight", c.dtype, {i, n}},
            {"up_proj_bias", c.dtype, {i}},       {"down_proj_weight", c.dtype, {n, i}},
            {"down_proj_bias", c.dtype, {n}},
        };
        if (rules_.lora) {
            specs.push_back({"lora_gate_A", c.dtype, {r, n}});
            specs.push_back({"lora_gate_B", c.dtype, {i, r}});
            specs.push_back({"lora_up_A", c.dtype, {r, n}});
            specs.push_back({"lora_up_B", c.dtype, {i, r}});
            specs.push_back({"lora_down_A", c.dtype, {r, i}});
            specs.push_back({"lora_down_B", c.dtype, {n, r}});
        }
        return specs;
    }
    std::vector<TensorSpec> output_specs(const ProblemConfig& c, int) const override {
        return {{"output", c.dtype, {c.m, c.n}}};
    }

    // pkb: the router and LoRA tensors standard normal, the nn.Linear parameters U(±1/√fan_in).
    // exact: every tensor k/4 with k uniform in [-2, 2] (GEMM sums stay exact in fp32; ties are common).
    void make_inputs(const ProblemConfig& c, int rank, std::vector<Tensor>& inputs) const override {
        const int id = info().id;
        for (std::size_t k = 0; k < inputs.size(); ++k) {
            const CounterRng rng = input_rng(c, id, rank, static_cast<int>(k));
            if (c.input_mode == InputMode::Exact) {
                fill_exact(inputs[k], rng, 2);
            } else if (k >= 3 && k <= 8) {
                // nn.Linear(in, out): fan_in = in = N for gate/up, 128 for down (weights 7, bias 8).
                const double bound = tk::linear_init_bound(k <= 6 ? c.n : kMoeInterDim);
                fill_uniform(inputs[k], rng, -bound, bound);
            } else {
                fill_normal(inputs[k], rng);
            }
        }
    }

    std::map<std::string, double> params(const ProblemConfig& c) const override {
        return {{"num_experts", experts(c)}, {"top_k", top_k(c)}, {"ep_size", ep_size(c)}};
    }

    // The tokens whose top-k choice is a tie (moe_router.h): the router of this rank's inputs in
    // float64 with the dtype's roundings, as the host oracle computes it.
    TieRowsByOutput tie_rows(const ProblemConfig& c, int, const std::vector<Tensor>& inputs) const override {
        const int e = experts(c), k = top_k(c);
        const auto values = [](const Tensor& t) {
            std::vector<double> v(static_cast<std::size_t>(t.numel()));
            for (std::int64_t i = 0; i < t.numel(); ++i) {
                v[static_cast<std::size_t>(i)] = t.get_f64(i);
            }
            return v;
        };
        const tk::RouterHost router = tk::moe_router_f64(c.dtype, values(inputs.at(0)), values(inputs.at(1)),
                                                         values(inputs.at(2)), c.m, c.n, e, k);
        // Experts e and e' tie harmlessly when the same EP rank processes both (one MLP per rank).
        TieRows ties{tk::router_tie_rows(router, e / ep_size(c)),
                     "top-" + std::to_string(k) + " of the " + std::string(dtype_name(c.dtype)) +
                         " router softmax: " + ordinal(k) + " and " + ordinal(k + 1) +
                         " probabilities equal, experts on different ranks (the lower expert index wins)"};
        if (ties.rows.empty()) {
            return {};
        }
        return {{"output", std::move(ties)}};
    }

    // Per rank: the router GEMM, the MLP on the ~k·M rows received (3 GEMMs, 9 with LoRA), the two
    // all-to-alls of ~k·M rows (S = the rows sent once).
    WorkModel work(const ProblemConfig& c) const override {
        const double m = static_cast<double>(c.m), n = static_cast<double>(c.n), e = experts(c), k = top_k(c),
                     i = kMoeInterDim, r = rules_.lora ? kMoeLoraRank : 0;
        const double rows = k * m;
        const double mlp_flops = 2 * rows * (3 * n * i + r * (2 * n + 2 * i + i + n));
        const double bytes = elem_bytes(c);
        return {.collective = CollectiveKind::AllToAll,
                .collective_bytes = rows * n * bytes,
                .flops = 2 * m * n * e + mlp_flops,
                .memory_bytes = (2 * m * n + e * n + 3 * n * i + 4 * rows * n) * bytes};
    }

private:
    static std::string ordinal(int i) {
        const char* suffix = i == 1 ? "st" : i == 2 ? "nd" : i == 3 ? "rd" : "th";
        return std::to_string(i) + suffix;
    }
    MoeForwardRules rules_;
};

} // namespace pkbw::problems
