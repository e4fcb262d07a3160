// Reference for PKB problem 87: every rank's first and last `padding` rows packed (cudaMemcpy2DAsync)
// and all-gathered (ncclAllGather), the shard framed by rank r-1's last rows and rank r+1's first rows
// (zeros at the ends), then tk::conv_im2col (im2col + cuBLAS, one rounding) with padding (0, p) and
// tk::add_channel_bias (torch's separate rounded bias add). W = 1 or padding 0: a plain conv2d.
#include "pkbw/solution.h"
#include "pkbw/toolkit/conv_im2col.cuh"

namespace {

namespace tk = pkbw::tk;

// Copies `rows` rows of `row_bytes` from each of `planes` planes (src pitch src_pitch) to dst (pitch
// dst_pitch), or zeros when src is null.
int copy_rows(const pkbw::Context& ctx, void* dst, std::size_t dst_pitch, const void* src,
              std::size_t src_pitch, std::size_t bytes, long long planes) {
    if (!src) {
        PKBW_CHECK(ctx, cudaMemset2DAsync(dst, dst_pitch, 0, bytes, planes, ctx.stream()));
        return 0;
    }
    PKBW_CHECK(ctx, cudaMemcpy2DAsync(dst, dst_pitch, src, src_pitch, bytes, planes, cudaMemcpyDeviceToDevice,
                                      ctx.stream()));
    return 0;
}

template <class T>
int conv_with_halos(const pkbw::Context& ctx) {
    const pkbw::TensorView& x = ctx.input(0);
    const pkbw::TensorView& w = ctx.input(1);
    const long long batch = x.shape[0], c = x.shape[1], h = x.shape[2], width = x.shape[3];
    const long long planes = batch * c, stride = static_cast<long long>(ctx.param("stride", 1.0));
    const long long pad = static_cast<long long>(ctx.param("padding", 1.0));
    const int world = ctx.world_size, rank = ctx.rank;
    T* y = ctx.output(0).as<T>();
    tk::ConvGeometry g;
    const T* source = x.as<T>();
    if (pad == 0 || world == 1) {
        g = tk::conv2d_geometry(c, w.shape[0], h, width, w.shape[2], w.shape[3], stride, stride, pad, pad);
    } else {
        const std::size_t row = static_cast<std::size_t>(width) * sizeof(T), edge = pad * row;
        const std::size_t local_bytes = 2 * planes * edge;
        char* local = static_cast<char*>(ctx.scratch("conv87_edges", local_bytes)); // [2, planes, pad, L]
        char* all = static_cast<char*>(ctx.scratch("conv87_all_edges", world * local_bytes));
        const long long rows = h + 2 * pad;
        char* framed = static_cast<char*>(ctx.scratch("conv87_framed", planes * rows * row));
        const char* xs = static_cast<const char*>(x.data);
        PKBW_TRY(copy_rows(ctx, local, edge, xs, h * row, edge, planes));
        PKBW_TRY(copy_rows(ctx, local + planes * edge, edge, xs + (h - pad) * row, h * row, edge, planes));
        PKBW_CHECK(ctx, ncclAllGather(local, all, local_bytes, ncclUint8, ctx.nccl(), ctx.stream()));
        const char* above =
            rank > 0 ? all + (rank - 1) * local_bytes + planes * edge : nullptr;         // its last rows
        const char* below = rank < world - 1 ? all + (rank + 1) * local_bytes : nullptr; // its first rows
        PKBW_TRY(copy_rows(ctx, framed, rows * row, above, edge, edge, planes));
        PKBW_TRY(copy_rows(ctx, framed + pad * row, rows * row, xs, h * row, h * row, planes));
        PKBW_TRY(copy_rows(ctx, framed + (pad + h) * row, rows * row, below, edge, edge, planes));
        g = tk::conv2d_geometry(c, w.shape[0], rows, width, w.shape[2], w.shape[3], stride, stride, 0, pad);
        source = reinterpret_cast<const T*>(framed);
    }
    PKBW_TRY(tk::conv_im2col<T>(ctx, g, batch, source, w.as<T>(), y));
    return tk::add_channel_bias<T>(ctx, y, ctx.input(2).as<T>(), batch, g.out_channels, g.out_positions());
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    PKBW_TRY(tk::dispatch_float(ctx, ctx.input(0).dtype, "87 reference", [&](auto tag) {
        using T = typename decltype(tag)::type;
        return conv_with_halos<T>(ctx);
    }));
    return tk::finish(ctx);
}
