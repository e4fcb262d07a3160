// Reference for PKB problem 38: pack each destination's column chunk of every third contiguously
// (qkv viewed [B*T*3, W, C/W], C = 512, permuted to [W, B*T*3, C/W]: tensor_split on the 512 part),
// the toolkit all-to-all of equal chunks, then [W, B, T*3*C/W] permuted to [B, W, T*3*C/W] = the
// [B, W*T, 3*C/W] output (cat on the sequence, then PKB's restore_shape view).
#include "pkbw/solution.h"
#include "pkbw/toolkit/alltoall.cuh"
#include "pkbw/toolkit/permute.cuh"

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& x = ctx.input(0);
    const int world = ctx.world_size;
    const long long b_n = x.shape[0], t_n = x.shape[1];
    const long long run = x.shape[2] / 3 / world; // elements of one third's column chunk
    const std::size_t size = pkbw::element_size(x.dtype);
    void* send = ctx.scratch("ulysses38_send", x.nbytes());
    void* recv = ctx.scratch("ulysses38_recv", x.nbytes());
    const int swap[] = {1, 0, 2};
    const long long packed[] = {b_n * t_n * 3, world, run};
    PKBW_TRY(pkbw::tk::permute(ctx, x.data, send, size, 3, packed, swap));
    PKBW_TRY(pkbw::tk::all_to_all(ctx, ctx.nccl(), send, recv, x.nbytes() / static_cast<std::size_t>(world)));
    const long long received[] = {world, b_n, t_n * 3 * run};
    return pkbw::tk::permute(ctx, recv, ctx.output(0).data, size, 3, received, swap);
}
