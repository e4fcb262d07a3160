// Hand-written sample candidate (not LLM output)
// PKB 87 (x [1, C, h, L] = a height shard, weight [C, C, k, k], bias [C]; params stride, padding): the
// shard is convolved with padding (0, p) after framing it with rank r-1's last p rows above and rank
// r+1's first p rows below (zeros beyond the first and last rank); W = 1 is a plain conv2d with padding p.
// Host backend, fp32: x goes into a symmetric buffer and the neighbours' rows are read in place.
#include "pkbw/solution.h"

#include <algorithm>
#include <cstring>
#include <vector>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& x = ctx.input(0);
    if (x.dtype != pkbw::DType::F32) {
        return ctx.fail("this sample handles fp32");
    }
    const long long c_in = x.shape[1], h = x.shape[2], width = x.shape[3];
    const long long c_out = ctx.input(1).shape[0], kh = ctx.input(1).shape[2], kw = ctx.input(1).shape[3];
    const long long stride = static_cast<long long>(ctx.param("stride", 1.0));
    const long long pad = static_cast<long long>(ctx.param("padding", 1.0));
    const pkbw::SymmetricMemory xs = ctx.symmetric("conv87_x", x.nbytes());
    std::memcpy(xs.local, x.data, x.nbytes());
    ctx.barrier();
    const int r = ctx.rank, last = ctx.world_size - 1;
    const float* above = r > 0 ? static_cast<const float*>(xs.peers[r - 1]) : nullptr;
    const float* below = r < last ? static_cast<const float*>(xs.peers[r + 1]) : nullptr;
    const float* mine = x.as<float>();
    // Row `row` of the framed shard (row in [-pad, h + pad)) of channel c, or null for a zero row.
    auto framed_row = [&](long long c, long long row) -> const float* {
        if (row >= 0 && row < h)
            return mine + (c * h + row) * width;
        const float* peer = row < 0 ? above : below;
        if (!peer || pad == 0)
            return nullptr;
        return peer + (c * h + (row < 0 ? h + row : row - h)) * width;
    };
    const long long out_h = (h + 2 * pad - kh) / stride + 1, out_w = (width + 2 * pad - kw) / stride + 1;
    const float* w = ctx.input(1).as<float>();
    const float* bias = ctx.input(2).as<float>();
    float* y = ctx.output(0).as<float>();
    std::vector<float> acc(static_cast<std::size_t>(out_w));
    for (long long o = 0; o < c_out; ++o) {
        for (long long i = 0; i < out_h; ++i) {
            std::fill(acc.begin(), acc.end(), 0.f);
            for (long long c = 0; c < c_in; ++c) {
                for (long long a = 0; a < kh; ++a) {
                    const float* row = framed_row(c, i * stride - pad + a);
                    if (!row)
                        continue;
                    for (long long b = 0; b < kw; ++b) {
                        const float wv = w[((o * c_in + c) * kh + a) * kw + b];
                        for (long long j = 0; j < out_w; ++j) {
                            const long long col = j * stride - pad + b;
                            if (col >= 0 && col < width)
                                acc[j] += wv * row[col];
                        }
                    }
                }
            }
            for (long long j = 0; j < out_w; ++j)
                y[(o * out_h + i) * out_w + j] = acc[j] + bias[o];
        }
    }
    ctx.barrier(); // peers may still read this rank's x
    return 0;
}
