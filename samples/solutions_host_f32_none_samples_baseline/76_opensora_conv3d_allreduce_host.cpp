// Hand-written sample candidate (not LLM output)
// PKB 76 (input [1, c, D, H, W] = this rank's input-channel shard, weight [C, c, kd, kh, kw], bias [C];
// params stride, padding, dilation, groups = 1): every rank convolves its shard with its weight slice,
// the partial outputs [1, C, D', H', W'] are summed over the ranks, then the bias is added.
// Host backend, fp32: each rank writes its partial into a symmetric buffer and sums all ranks' partials
// in rank order after a barrier.
#include "pkbw/solution.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace {

struct Conv3d {
    long long c_in, c_out, in[3], k[3], out[3], stride, pad, dilation;
};

// partial[o, od, oh, :] for every output channel o and output depth/row.
void convolve(const Conv3d& g, const float* x, const float* w, float* partial) {
    const long long plane = g.out[1] * g.out[2], positions = g.out[0] * plane;
    std::fill(partial, partial + g.c_out * positions, 0.f);
    for (long long o = 0; o < g.c_out; ++o)
        for (long long c = 0; c < g.c_in; ++c)
            for (long long a = 0; a < g.k[0]; ++a)
                for (long long b = 0; b < g.k[1]; ++b)
                    for (long long e = 0; e < g.k[2]; ++e) {
                        const float wv = w[(((o * g.c_in + c) * g.k[0] + a) * g.k[1] + b) * g.k[2] + e];
                        for (long long d = 0; d < g.out[0]; ++d) {
                            const long long id = d * g.stride - g.pad + a * g.dilation;
                            if (id < 0 || id >= g.in[0])
                                continue;
                            for (long long h = 0; h < g.out[1]; ++h) {
                                const long long ih = h * g.stride - g.pad + b * g.dilation;
                                if (ih < 0 || ih >= g.in[1])
                                    continue;
                                const float* row = x + ((c * g.in[0] + id) * g.in[1] + ih) * g.in[2];
                                float* acc = partial + o * positions + d * plane + h * g.out[2];
                                for (long long j = 0; j < g.out[2]; ++j) {
                                    const long long iw = j * g.stride - g.pad + e * g.dilation;
                                    if (iw >= 0 && iw < g.in[2])
                                        acc[j] += wv * row[iw];
                                }
                            }
                        }
                    }
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& x = ctx.input(0);
    const pkbw::TensorView& w = ctx.input(1);
    if (x.dtype != pkbw::DType::F32)
        return ctx.fail("this sample handles fp32");
    if (static_cast<long long>(ctx.param("groups", 1.0)) != 1)
        return ctx.fail("this sample handles groups = 1");
    Conv3d g{};
    g.c_in = x.shape[1];
    g.c_out = w.shape[0];
    g.stride = static_cast<long long>(ctx.param("stride", 1.0));
    g.pad = static_cast<long long>(ctx.param("padding", 0.0));
    g.dilation = static_cast<long long>(ctx.param("dilation", 1.0));
    for (int axis = 0; axis < 3; ++axis) {
        g.in[axis] = x.shape[2 + axis];
        g.k[axis] = w.shape[2 + axis];
        g.out[axis] = (g.in[axis] + 2 * g.pad - g.dilation * (g.k[axis] - 1) - 1) / g.stride + 1;
    }
    const pkbw::TensorView& y = ctx.output(0);
    const long long total = y.numel(), positions = total / g.c_out;
    const pkbw::SymmetricMemory partials = ctx.symmetric("conv76_partial", y.nbytes());
    convolve(g, x.as<float>(), w.as<float>(), static_cast<float*>(partials.local));
    ctx.barrier();
    float* out = y.as<float>();
    std::memcpy(out, partials.peers[0], y.nbytes());
    for (int r = 1; r < ctx.world_size; ++r) {
        const float* peer = static_cast<const float*>(partials.peers[r]);
        for (long long i = 0; i < total; ++i)
            out[i] += peer[i];
    }
    const float* bias = ctx.input(2).as<float>();
    for (long long i = 0; i < total; ++i)
        out[i] += bias[i / positions];
    ctx.barrier(); // peers may still read this rank's partial
    return 0;
}
