// Reference for PKB problem 37: when W does not divide T the sequence is zero-padded to Tp =
// ceil(T/W)*W into a scratch tensor (PKB's _pad_tensor); the padded x viewed [B, W, Tc*H*D] is
// permuted to [W, B, Tc*H*D] (tensor_split on dim 1), the toolkit all-to-all moves equal chunks, and
// [W, B*Tc, H*D] is permuted to [B*Tc, W, H*D] = the [B, Tc, W*H, D] output (cat on dim 2).
#include "pkbw/solution.h"
#include "pkbw/toolkit/alltoall.cuh"
#include "pkbw/toolkit/permute.cuh"

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& x = ctx.input(0);
    const pkbw::TensorView& out = ctx.output(0);
    const int world = ctx.world_size;
    const long long b_n = x.shape[0], t_n = x.shape[1], chunk_t = out.shape[1];
    const long long token = x.shape[2] * x.shape[3];
    const std::size_t size = pkbw::element_size(x.dtype);
    const std::size_t padded_bytes = out.nbytes(); // B * Tp * H * D elements, like the output
    const void* padded = x.data;
    if (chunk_t * world != t_n) {
        void* buffer = ctx.scratch("ulysses37_padded", padded_bytes);
        PKBW_CHECK(ctx, cudaMemsetAsync(buffer, 0, padded_bytes, ctx.stream()));
        const std::size_t row = static_cast<std::size_t>(t_n * token) * size;
        PKBW_CHECK(ctx, cudaMemcpy2DAsync(buffer, static_cast<std::size_t>(chunk_t * world * token) * size,
                                          x.data, row, row, static_cast<std::size_t>(b_n),
                                          cudaMemcpyDeviceToDevice, ctx.stream()));
        padded = buffer;
    }
    void* send = ctx.scratch("ulysses37_send", padded_bytes);
    void* recv = ctx.scratch("ulysses37_recv", padded_bytes);
    const int swap[] = {1, 0, 2};
    const long long split[] = {b_n, world, chunk_t * token};
    PKBW_TRY(pkbw::tk::permute(ctx, padded, send, size, 3, split, swap));
    PKBW_TRY(
        pkbw::tk::all_to_all(ctx, ctx.nccl(), send, recv, padded_bytes / static_cast<std::size_t>(world)));
    const long long received[] = {world, b_n * chunk_t, token};
    return pkbw::tk::permute(ctx, recv, out.data, size, 3, received, swap);
}
