// Reference for PKB problem 36: pack each destination's head chunk contiguously (x viewed
// [B*T, W, H/W*D] permuted to [W, B*T, H/W*D]: tensor_split on dim 2), the toolkit all-to-all of equal
// chunks, then [W, B, T*H/W*D] permuted to [B, W, T*H/W*D] = the [B, W*T, H/W, D] output (cat on
// dim 1).
#include "pkbw/solution.h"
#include "pkbw/toolkit/alltoall.cuh"
#include "pkbw/toolkit/permute.cuh"

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& x = ctx.input(0);
    const int world = ctx.world_size;
    const long long b_n = x.shape[0], t_n = x.shape[1];
    const long long run = x.shape[2] / world * x.shape[3]; // elements of one token's head chunk
    const std::size_t size = pkbw::element_size(x.dtype);
    void* send = ctx.scratch("ulysses36_send", x.nbytes());
    void* recv = ctx.scratch("ulysses36_recv", x.nbytes());
    const int swap[] = {1, 0, 2};
    const long long packed[] = {b_n * t_n, world, run};
    PKBW_TRY(pkbw::tk::permute(ctx, x.data, send, size, 3, packed, swap));
    PKBW_TRY(pkbw::tk::all_to_all(ctx, ctx.nccl(), send, recv, x.nbytes() / static_cast<std::size_t>(world)));
    const long long received[] = {world, b_n, t_n * run};
    return pkbw::tk::permute(ctx, recv, ctx.output(0).data, size, 3, received, swap);
}
