// Reference for PKB problem 72: z = x2 v (D) on the sequence shards; tk::all_to_all to channel shards;
// the zigzag order undone (tk::zigzag_position); tk::long_convolution (cuFFT R2C/C2R of length 2L,
// fp32) plus z bias in fp32, rounded to D, packed in zigzag order for its destination; tk::all_to_all
// back; times x1 (D), written transposed. PKB exchanges x1, x2 and v and multiplies on the channel
// shards: elementwise products commute with the exchange, so z goes out and y comes back instead, with
// the same values.
#include "pkbw/solution.h"
#include "pkbw/toolkit/alltoall.cuh"
#include "pkbw/toolkit/fft_conv.cuh"
#include "pkbw/toolkit/zigzag.h"

namespace {

namespace tk = pkbw::tk;

template <class T>
__global__ void product(const T* a, const T* b, T* z, long long n) {
    for (long long i = PKBW_GRID_STRIDE_BEGIN; i < n; i += PKBW_GRID_STRIDE_STEP)
        z[i] = tk::from_float<T>(__fmul_rn(tk::to_float(a[i]), tk::to_float(b[i])));
}

// u [local, L] from recv [W, local, ls]: global chunk g / half sits at zigzag position p, in half p % 2
// of source p / 2's sequence.
template <class T>
__global__ void unzigzag(const T* recv, T* u, long long local, long long ls, long long length,
                         long long chunks) {
    const long long half = ls / 2;
    for (long long i = PKBW_GRID_STRIDE_BEGIN; i < local * length; i += PKBW_GRID_STRIDE_STEP) {
        const long long c = i / length, g = i % length, p = tk::zigzag_position(g / half, chunks);
        u[i] = recv[((p / 2) * local + c) * ls + (p % 2) * half + g % half];
    }
}

// y + u bias in fp32, rounded to D, into send [W, local, ls] at the sample's zigzag place.
template <class T>
__global__ void add_bias_rezigzag(const float* y, const T* u, const T* bias, T* send, long long local,
                                  long long ls, long long length, long long chunks) {
    const long long half = ls / 2;
    for (long long i = PKBW_GRID_STRIDE_BEGIN; i < local * length; i += PKBW_GRID_STRIDE_STEP) {
        const long long c = i / length, g = i % length, p = tk::zigzag_position(g / half, chunks);
        const float value = __fadd_rn(y[i], __fmul_rn(tk::to_float(u[i]), tk::to_float(bias[c])));
        send[((p / 2) * local + c) * ls + (p % 2) * half + g % half] = tk::from_float<T>(value);
    }
}

// out [ls, C] = x1 [C, ls] * y [C, ls], transposed.
template <class T>
__global__ void gate_transpose(const T* x1, const T* y, T* out, long long chans, long long ls) {
    for (long long i = PKBW_GRID_STRIDE_BEGIN; i < chans * ls; i += PKBW_GRID_STRIDE_STEP) {
        const long long t = i / chans, c = i % chans;
        out[i] = tk::from_float<T>(__fmul_rn(tk::to_float(x1[c * ls + t]), tk::to_float(y[c * ls + t])));
    }
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& x1 = ctx.input(0);
    const int world = ctx.world_size, me = ctx.rank;
    const long long chans = x1.shape[1], ls = x1.shape[2], taps = ctx.input(3).shape[1],
                    local = chans / world, length = ls * world, n = chans * ls;
    if (chans % world != 0 || ls % 2 != 0)
        return ctx.fail("72 reference: W must divide the channels and the local sequence must be even");
    const std::size_t es = pkbw::element_size(x1.dtype), bytes = static_cast<std::size_t>(n) * es;
    char* send = static_cast<char*>(ctx.scratch("hyena72_send", bytes));
    char* recv = static_cast<char*>(ctx.scratch("hyena72_recv", bytes));
    char* u = static_cast<char*>(ctx.scratch("hyena72_u", bytes));
    float* y = static_cast<float*>(ctx.scratch("hyena72_y", static_cast<std::size_t>(n) * sizeof(float)));
    return tk::dispatch_float(ctx, x1.dtype, "72 reference", [&](auto tag) {
        using T = typename decltype(tag)::type;
        const unsigned grid = tk::grid_for(n);
        product<T><<<grid, 256, 0, ctx.stream()>>>(ctx.input(1).as<T>(), ctx.input(2).as<T>(),
                                                   reinterpret_cast<T*>(send), n);
        PKBW_TRY(tk::all_to_all(ctx, ctx.nccl(), send, recv, bytes / world));
        unzigzag<T><<<grid, 256, 0, ctx.stream()>>>(reinterpret_cast<const T*>(recv), reinterpret_cast<T*>(u),
                                                    local, ls, length, 2LL * world);
        const T* h = ctx.input(3).as<T>() + me * local * taps;
        PKBW_TRY(tk::long_convolution<T>(ctx, {local, length, taps, 2 * length},
                                         reinterpret_cast<const T*>(u), h, y));
        add_bias_rezigzag<T><<<grid, 256, 0, ctx.stream()>>>(
            y, reinterpret_cast<const T*>(u), ctx.input(4).as<T>() + me * local, reinterpret_cast<T*>(send),
            local, ls, length, 2LL * world);
        PKBW_TRY(tk::all_to_all(ctx, ctx.nccl(), send, recv, bytes / world));
        gate_transpose<T><<<grid, 256, 0, ctx.stream()>>>(x1.as<T>(), reinterpret_cast<const T*>(recv),
                                                          ctx.output(0).as<T>(), chans, ls);
        return tk::finish(ctx);
    });
}
