// The common part of PKB 36, 37 and 38, Ulysses' all-to-all primitives on attention activations of
// PKB's _common_attn_dims (B = max(1, M/64), T = max(1, N/64), 8 heads of 64; attention_inputs.h):
// W divides the 8 heads, the one input is standard normal per rank (exact mode: the amplitude of one
// term, as nothing is summed), and the work is one all-to-all of the elements each rank sends, read
// once and written once. Each problem gives its shapes, params and sent elements.
#pragma once

#include "attention_inputs.h"
#include "problem_util.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace pkbw::problems {

inline std::int64_t attn_seq(const ProblemConfig& c) {
    return attn_local_seq(c, 1);
}

class UlyssesAllToAllProblem : public BasicProblem {
public:
    using BasicProblem::BasicProblem;

    std::optional<std::string> check_config(const ProblemConfig& c) const override {
        return check_attn_heads(c, info());
    }
    void make_inputs(const ProblemConfig& c, int rank, std::vector<Tensor>& inputs) const override {
        fill_random_inputs(c, info().id, rank, inputs, exact_amplitude(c.dtype, 1));
    }
    WorkModel work(const ProblemConfig& c) const override {
        const double sent = static_cast<double>(sent_elements(c)) * elem_bytes(c);
        return {.collective = CollectiveKind::AllToAll,
                .collective_bytes = sent,
                .flops = 0,
                .memory_bytes = 2 * sent};
    }

protected:
    // The elements one rank sends (its input, padded where the problem pads).
    virtual std::int64_t sent_elements(const ProblemConfig& c) const = 0;
};

} // namespace pkbw::problems
