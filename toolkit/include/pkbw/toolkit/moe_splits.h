// PKB's MoE count exchange as host arithmetic (`_preprocess` of problems 31, 32, 49-51), shared by the
// device exchange (moe_exchange.cuh) and the host oracle (moe_exchange_host.h).
//
// Expert e lives on EP rank e / L (L = experts / ep_size local experts, consecutive). From every EP
// rank's per-expert token counts (all_gather_into_tensor of expert_mask.sum(dim=(1, 2))):
//     input_splits[p]      = Σ_{e on p} counts[me][e]          rows this rank sends to p
//     output_splits[p]     = Σ_{j < L} counts[p][me·L + j]      rows this rank receives from p
//     per_local_expert[p·L + j] = counts[p][me·L + j]          the received chunks: [source p][local j]
// The received rows are packed by source rank and, within one source, by local expert (the sender's
// rows are expert-major). PKB then regroups them to [local j][source p] (`_sort_chunks_by_idxs`).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace pkbw::tk {

struct MoeSplits {
    int ep_size = 1, ep_rank = 0, experts = 0, local_experts = 0;
    std::vector<long long> input_splits;     // [ep_size]
    std::vector<long long> output_splits;    // [ep_size]
    std::vector<long long> per_local_expert; // [ep_size * local_experts], [source][local expert]
    long long sent() const {
        long long s = 0;
        for (long long v : input_splits)
            s += v;
        return s;
    }
    long long received() const {
        long long s = 0;
        for (long long v : output_splits)
            s += v;
        return s;
    }
};

// all_counts: [ep_size, experts], row p = EP rank p's counts. Returns an empty string, or why the
// arguments cannot form splits (experts not divisible by ep_size).
inline std::string moe_splits_from_counts(const std::vector<long long>& all_counts, int ep_size, int ep_rank,
                                          int experts, MoeSplits& out) {
    if (ep_size < 1 || experts < 1 || experts % ep_size != 0)
        return "the expert count (" + std::to_string(experts) +
               ") must be a multiple of the EP group size (" + std::to_string(ep_size) + ")";
    if (all_counts.size() != static_cast<std::size_t>(ep_size) * experts)
        return "the gathered counts have the wrong length";
    const int l = experts / ep_size;
    out.ep_size = ep_size;
    out.ep_rank = ep_rank;
    out.experts = experts;
    out.local_experts = l;
    out.input_splits.assign(static_cast<std::size_t>(ep_size), 0);
    out.output_splits.assign(static_cast<std::size_t>(ep_size), 0);
    out.per_local_expert.assign(static_cast<std::size_t>(ep_size) * l, 0);
    for (int p = 0; p < ep_size; ++p) {
        for (int j = 0; j < l; ++j) {
            out.input_splits[p] += all_counts[static_cast<std::size_t>(ep_rank) * experts + p * l + j];
            const long long from_p = all_counts[static_cast<std::size_t>(p) * experts + ep_rank * l + j];
            out.output_splits[p] += from_p;
            out.per_local_expert[static_cast<std::size_t>(p) * l + j] = from_p;
        }
    }
    return {};
}

} // namespace pkbw::tk
