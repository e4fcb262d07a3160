// Reference for PKB problem 76: each rank's conv3d over its input-channel shard with tk::conv_im2col
// (im2col in column chunks + one cuBLAS GEMM each, fp32 accumulation, rounded once to D), the partial
// outputs summed by ncclAllReduce in D in place, then tk::add_channel_bias (a separately rounded add).
// PKB's channel chunking above 2^31 elements is never reached: the descriptor refuses such shapes.
#include "pkbw/solution.h"
#include "pkbw/toolkit/conv_im2col.cuh"

namespace {

namespace tk = pkbw::tk;

// F.conv3d's geometry for x [batch, channels, d, h, w] and weight [out, channels, kd, kh, kw]; PKB
// passes one int each for stride, padding and dilation.
tk::ConvGeometry conv3d_of(const pkbw::Context& ctx) {
    const pkbw::TensorView& x = ctx.input(0);
    const pkbw::TensorView& w = ctx.input(1);
    const long long in[3] = {x.shape[2], x.shape[3], x.shape[4]},
                    kernel[3] = {w.shape[2], w.shape[3], w.shape[4]};
    return tk::conv3d_geometry(x.shape[1], w.shape[0], in, kernel,
                               static_cast<long long>(ctx.param("stride", 1.0)),
                               static_cast<long long>(ctx.param("padding", 0.0)),
                               static_cast<long long>(ctx.param("dilation", 1.0)));
}

template <class T>
int conv_all_reduce(const pkbw::Context& ctx) {
    const tk::ConvGeometry g = conv3d_of(ctx);
    const long long batch = ctx.input(0).shape[0];
    const pkbw::TensorView& out = ctx.output(0);
    T* y = out.as<T>();
    PKBW_TRY(tk::conv_im2col<T>(ctx, g, batch, ctx.input(0).as<T>(), ctx.input(1).as<T>(), y));
    PKBW_CHECK(ctx, ncclAllReduce(y, y, static_cast<size_t>(out.numel()), pkbw::nccl_dtype(out.dtype),
                                  ncclSum, ctx.nccl(), ctx.stream()));
    return tk::add_channel_bias<T>(ctx, y, ctx.input(2).as<T>(), batch, g.out_channels, g.out_positions());
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    if (static_cast<long long>(ctx.param("groups", 1.0)) != 1)
        return ctx.fail("76 reference: groups must be 1");
    PKBW_TRY(tk::dispatch_float(ctx, ctx.input(0).dtype, "76 reference", [&](auto tag) {
        using T = typename decltype(tag)::type;
        return conv_all_reduce<T>(ctx);
    }));
    return tk::finish(ctx);
}
