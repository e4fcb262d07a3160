// A test-only problem with top-2 ties (issue 16), registered by the test executable and by the rank
// program built for it (pkbw_test_tie_rank); it has no folder under problems/, so the test writes its
// host reference (kTieReferenceSource) into a data root of its own.
//
// Each rank holds scores [M, 4] (f32); the output keeps each token's two largest scores in place and
// zeroes the others. On a tie the lower index wins. Tokens with t % 3 == 1 have their 2nd and 3rd
// scores equal: those are the tie rows, where a candidate breaking ties the other way differs.
#include "tie_problem.h"

#include "pkbw/problems/registry.h"

#include <algorithm>
#include <array>

namespace pkbw::test {
namespace {

class TopTwoTieProblem final : public Problem {
public:
    const ProblemInfo& info() const override {
        static const ProblemInfo i{kTieProblemId,
                                   kTieProblemStem,
                                   "MoE",
                                   "top-2 with ties (test)",
                                   "test-only: the two largest of four scores per token",
                                   1e-2,
                                   1e-2,
                                   false,
                                   false};
        return i;
    }
    std::vector<TensorSpec> input_specs(const ProblemConfig& c, int) const override {
        return {{"scores", DType::F32, {c.m, 4}}};
    }
    std::vector<TensorSpec> output_specs(const ProblemConfig& c, int) const override {
        return {{"output", DType::F32, {c.m, 4}}};
    }
    void make_inputs(const ProblemConfig& c, int rank, std::vector<Tensor>& inputs) const override {
        float* v = inputs[0].mutable_data_as<float>();
        for (std::int64_t t = 0; t < c.m; ++t) {
            // A distinct largest score, then either three distinct ones or a tie for 2nd place,
            // rotated so that the tied experts differ from token to token and rank to rank.
            const std::array<float, 4> base = t % 3 == 1 ? std::array<float, 4>{0.5f, 0.25f, 0.25f, 0.125f}
                                                         : std::array<float, 4>{0.5f, 0.375f, 0.25f, 0.125f};
            for (int e = 0; e < 4; ++e)
                v[t * 4 + (e + t + rank + c.trial) % 4] = base[e];
        }
    }
    TieRowsByOutput tie_rows(const ProblemConfig&, int, const std::vector<Tensor>& inputs) const override {
        const Tensor& scores = inputs.at(0);
        TieRows ties{{}, "top-2 of 4 scores: 2nd and 3rd equal"};
        for (std::int64_t t = 0; t < scores.shape()[0]; ++t) {
            std::array<float, 4> row;
            for (int e = 0; e < 4; ++e)
                row[e] = scores.get_f32(t * 4 + e);
            std::sort(row.rbegin(), row.rend());
            if (row[1] == row[2])
                ties.rows.push_back(t);
        }
        return {{"output", std::move(ties)}};
    }
};

const TopTwoTieProblem kProblem;
const bool kRegistered = (register_extra_problem(kProblem), true);

} // namespace

// The two largest scores of each row, lower index first on a tie (the reference's rule); the
// candidates in the test break ties towards the higher index instead.
const char* const kTieReferenceSource = R"(#include "pkbw/solution.h"
extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const float* in = ctx.input(0).as<float>();
    float* out = ctx.output(0).as<float>();
    for (long long t = 0; t < ctx.input(0).shape[0]; ++t) {
        int first = 0, second = -1;
        for (int e = 1; e < 4; ++e)
            if (in[t * 4 + e] > in[t * 4 + first]) first = e;
        for (int e = 0; e < 4; ++e)
            if (e != first && (second < 0 || in[t * 4 + e] > in[t * 4 + second])) second = e;
        for (int e = 0; e < 4; ++e)
            out[t * 4 + e] = (e == first || e == second) ? in[t * 4 + e] : 0.0f;
    }
    return 0;
}
)";

} // namespace pkbw::test
