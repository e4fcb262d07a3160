// Reference for PKB problem 27: one toolkit all_to_all_v of token rows with the problem's split lists
// (input_split_sizes per destination, output_split_sizes per source); W = 1 is a copy, as PKB's
// early return of the input.
#include "pkbw/solution.h"
#include "pkbw/toolkit/alltoall.cuh"
#include "pkbw/toolkit/check.cuh"
#include "pkbw/toolkit/split_lists.h"

#include <string>
#include <vector>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& in = ctx.input(0);
    const pkbw::TensorView& out = ctx.output(0);
    if (ctx.world_size == 1) {
        PKBW_CHECK(ctx,
                   cudaMemcpyAsync(out.data, in.data, in.nbytes(), cudaMemcpyDeviceToDevice, ctx.stream()));
        return 0;
    }
    const std::vector<long long> send = pkbw::tk::rank_list(ctx, "input_split_sizes");
    const std::vector<long long> recv = pkbw::tk::rank_list(ctx, "output_split_sizes");
    if (send.empty() || recv.empty()) {
        return ctx.fail("27 reference: input_split_sizes and output_split_sizes need one entry per rank");
    }
    if (pkbw::tk::total_rows(send) != in.shape[0] || pkbw::tk::total_rows(recv) != out.shape[0]) {
        return ctx.fail("27 reference: the split lists do not sum to the input's and the output's rows");
    }
    const std::size_t row_bytes = static_cast<std::size_t>(in.shape[1]) * pkbw::element_size(in.dtype);
    return pkbw::tk::all_to_all_v(ctx, ctx.nccl(), in.data, send.data(), out.data, recv.data(), row_bytes);
}
