// Reference for PKB problem 27: one toolkit all_to_all_v of token rows with the problem's split lists
// (input_split_sizes per destination, output_split_sizes per source); W = 1 is a copy, as PKB's
// early return of the input.
#include "pkbw/solution.h"
#include "pkbw/toolkit/alltoall.cuh"
#include "pkbw/toolkit/check.cuh"

#include <string>
#include <vector>

namespace {

// A list param with one entry per rank, or empty when it is missing or has another length.
std::vector<long long> rank_list(const pkbw::Context& ctx, const char* name) {
    double values[pkbw::kMaxRanks];
    const int length = ctx.param_list(name, values, pkbw::kMaxRanks);
    if (length != ctx.world_size) {
        return {};
    }
    return std::vector<long long>(values, values + length);
}

long long sum_of(const std::vector<long long>& v) {
    long long s = 0;
    for (long long x : v) {
        s += x;
    }
    return s;
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& in = ctx.input(0);
    const pkbw::TensorView& out = ctx.output(0);
    if (ctx.world_size == 1) {
        PKBW_CHECK(ctx,
                   cudaMemcpyAsync(out.data, in.data, in.nbytes(), cudaMemcpyDeviceToDevice, ctx.stream()));
        return 0;
    }
    const std::vector<long long> send = rank_list(ctx, "input_split_sizes");
    const std::vector<long long> recv = rank_list(ctx, "output_split_sizes");
    if (send.empty() || recv.empty()) {
        return ctx.fail("27 reference: input_split_sizes and output_split_sizes need one entry per rank");
    }
    if (sum_of(send) != in.shape[0] || sum_of(recv) != out.shape[0]) {
        return ctx.fail("27 reference: the split lists do not sum to the input's and the output's rows");
    }
    const std::size_t row_bytes = static_cast<std::size_t>(in.shape[1]) * pkbw::element_size(in.dtype);
    return pkbw::tk::all_to_all_v(ctx, ctx.nccl(), in.data, send.data(), out.data, recv.data(), row_bytes);
}
