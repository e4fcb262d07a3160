// PKB problem 77: MAGI-1's context-shuffle-overlap attention: key/value heads redistributed by
// all-to-all, then for each of 4 key ranges an all-to-all of the queries (sequence to head shards), a
// non-causal GQA attention over the range's keys, and an all-to-all of the outputs back, pipelined.
#include "magi_dims.h"

namespace pkbw::problems {
namespace {

class MagiCsoAttention final : public BasicProblem {
public:
    MagiCsoAttention()
        : BasicProblem(
              {.id = 77,
               .stem = "77_magi1_cso_async_attention",
               .category = "SCP",
               .title = "MAGI-1 context-shuffle-overlap attention: KV all-to-all, 4 ranges of query/output "
                        "all-to-alls around non-causal GQA attention",
               .description =
                   "Every rank holds query [4S, Hq, 128] and key_value [4S, Hkv, 256] (k | v; standard "
                   "normal; bf16 in bf16 and f16 runs, else the dtype) and k_ranges [4, 2] (range i = [iK, "
                   "(i+1)K)); "
                   "S = ceil(K/W). PKB: K = 12150 tokens per range, Hq = 24 (W <= 4) or K = 21600, Hq = 48 "
                   "(W = 8), Hkv = 8, with PKB's adjustments when W does not divide them; pkbw scales K by "
                   "N/1024 (the default N = 1024 is PKB's shape). Key/value heads go to head shards by "
                   "all-to-all; range i's keys are the first K of the W S tokens of every rank's i-th slice; "
                   "its queries go from sequence to head shards, attend (softmax(q k^T / sqrt(128)) v, no "
                   "mask, each query head on its group's key head) and come back. Output [4S, Hq, 128]."}) {}

    std::optional<std::string> check_config(const ProblemConfig& c) const override {
        if (auto why = check_common(c, info())) {
            return why;
        }
        const MagiDims d = magi_dims(c);
        if (d.range_tokens < 1) {
            return info().stem + ": N = " + std::to_string(c.n) +
                   " gives no key in a range (K = 12150 N/1024)";
        }
        const std::int64_t local_kv = d.kv_heads_spread / c.world_size;
        if (d.kv_heads_spread % c.world_size != 0 || (d.q_heads / c.world_size) % local_kv != 0) {
            return info().stem + ": the head counts do not group at W = " + std::to_string(c.world_size);
        }
        return std::nullopt;
    }
    std::vector<TensorSpec> input_specs(const ProblemConfig& c, int) const override {
        const MagiDims d = magi_dims(c);
        return {{"query", d.dtype, {d.tokens(), d.q_heads, kMagiHeadDim}},
                {"key_value", d.dtype, {d.tokens(), d.kv_heads, 2 * kMagiHeadDim}},
                {"k_ranges", DType::I64, {kMagiRanges, 2}}};
    }
    std::vector<TensorSpec> output_specs(const ProblemConfig& c, int) const override {
        const MagiDims d = magi_dims(c);
        return {{"output", d.dtype, {d.tokens(), d.q_heads, kMagiHeadDim}}};
    }
    void make_inputs(const ProblemConfig& c, int rank, std::vector<Tensor>& inputs) const override {
        fill_magi_inputs(c, info().id, rank, inputs);
    }
    std::map<std::string, double> params(const ProblemConfig& c) const override {
        const MagiDims d = magi_dims(c);
        return {{"cp_shuffle_num", kMagiRanges}, {"clip_token_nums", static_cast<double>(d.range_tokens)}};
    }
    WorkModel work(const ProblemConfig& c) const override {
        const MagiDims d = magi_dims(c);
        const double e = static_cast<double>(dtype_size(d.dtype)), w = c.world_size;
        const double queries = static_cast<double>(kMagiRanges * d.slice_tokens) * w; // per rank, all ranges
        const double q_bytes = static_cast<double>(d.tokens() * d.q_heads * kMagiHeadDim) * e;
        const double kv_bytes = static_cast<double>(d.tokens() * d.kv_heads_spread * 2 * kMagiHeadDim) * e;
        return {.collective = CollectiveKind::AllToAll,
                .collective_bytes = 2 * q_bytes + kv_bytes,
                .flops = 4.0 * queries * static_cast<double>(d.q_heads) / w *
                         static_cast<double>(d.range_tokens) * kMagiHeadDim,
                .memory_bytes = 2 * q_bytes + kv_bytes};
    }
};

} // namespace

const Problem& problem_77() {
    static const MagiCsoAttention problem;
    return problem;
}

} // namespace pkbw::problems
