// Reference for PKB problem 58: the SigLIP loss of the own block, then the text blocks of the other
// ranks through a bidirectional ring (tk::ring_shift on the world in rank order for the rightward
// direction and on a reversed-order sub-communicator for the leftward one), each block's logits by
// tk::gemm and its loss term by one block-reduction kernel, every op rounded to D as torch stores it.
#include "pkbw/solution.h"
#include "pkbw/toolkit/gemm.cuh"
#include "pkbw/toolkit/reduce.cuh"
#include "pkbw/toolkit/ring.cuh"
#include "pkbw/toolkit/types.cuh"

namespace {

namespace tk = pkbw::tk;
constexpr int kThreads = 1024;

template <class T>
__global__ void scale_kernel(const T* x, float scale, T* y, long long n) {
    for (long long i = PKBW_GRID_STRIDE_BEGIN; i < n; i += PKBW_GRID_STRIDE_STEP)
        y[i] = tk::from_float<T>(scale * tk::to_float(x[i]));
}

// torch's CUDA log_sigmoid in fp32: min(x, 0) - log1p(exp(-|x|)).
__device__ float log_sigmoid(float x) {
    return fminf(x, 0.f) - log1pf(expf(-fabsf(x)));
}

// loss (+)= -sum(logsigmoid(label * (g + bias))) / B for the B x B block g = (scale * image) @ textᵀ:
// the logits, the logsigmoid and the sum each rounded to T; the division by B is torch's multiplication
// by the fp32 reciprocal; the accumulation into the loss is one rounded add. One block.
template <class T>
__global__ void siglip_term_kernel(const T* g, long long b, float bias, bool positives, bool first, T* loss) {
    float acc = 0.f;
    for (long long i = threadIdx.x; i < b * b; i += kThreads) {
        const float logit = tk::round_as<T>(tk::to_float(g[i]) + bias);
        const bool diagonal = positives && i / b == i % b;
        acc += tk::round_as<T>(log_sigmoid(diagonal ? logit : -logit));
    }
    const float sum = tk::block_reduce<kThreads>(acc, tk::SumOp{});
    if (threadIdx.x == 0) {
        const float term = tk::round_as<T>(-tk::round_as<T>(sum) * (1.f / static_cast<float>(b)));
        *loss = tk::from_float<T>(first ? term : tk::to_float(*loss) + term);
    }
}

template <class T>
int add_term(const pkbw::Context& ctx, const T* scaled_image, const void* text, long long b, long long d,
             float bias, bool own, T* logits) {
    // logits[b, b] = scaled_image · textᵀ (F.linear's product without a bias)
    PKBW_TRY(tk::linear(ctx, ctx.input(0).dtype, b, d, b, scaled_image, text, nullptr, logits));
    siglip_term_kernel<T><<<1, kThreads, 0, ctx.stream()>>>(logits, b, bias, own, own, ctx.output(0).as<T>());
    PKBW_CHECK(ctx, cudaGetLastError());
    return 0;
}

template <class T>
int siglip_ring(const pkbw::Context& ctx) {
    const pkbw::TensorView& image = ctx.input(0);
    const long long b = image.shape[0], d = image.shape[1];
    const std::size_t bytes = static_cast<std::size_t>(b * d) * sizeof(T);
    const float scale = static_cast<float>(ctx.param("logit_scale", 10.0));
    const float bias = static_cast<float>(ctx.param("logit_bias", 0.0));
    T* scaled = static_cast<T*>(ctx.scratch("siglip58_scaled", bytes));
    T* logits = static_cast<T*>(ctx.scratch("siglip58_logits", static_cast<std::size_t>(b * b) * sizeof(T)));
    T* blocks = static_cast<T*>(ctx.scratch("siglip58_blocks", 4 * bytes)); // two (right, left) pairs
    scale_kernel<T><<<tk::grid_for(b * d), 256, 0, ctx.stream()>>>(image.as<T>(), scale, scaled, b * d);
    PKBW_CHECK(ctx, cudaGetLastError());
    PKBW_TRY(add_term<T>(ctx, scaled, ctx.input(1).data, b, d, bias, true, logits));

    const int world = ctx.world_size;
    if (world == 1)
        return 0;
    const pkbw::SubComm rightward = ctx.sub_comm_blocks(world); // next = rank + 1
    const void* to_left = ctx.input(1).data;
    const void* to_right = ctx.input(1).data;
    for (int step = 0; step < (world - 1) / 2; ++step) {
        // Group rank = W-1-rank, so the next rank of this group is world rank - 1.
        const pkbw::SubComm leftward = ctx.sub_comm_split(0, world - 1 - ctx.rank);
        T* from_right = blocks + (step % 2) * 2 * b * d;
        T* from_left = from_right + b * d;
        const tk::RingBuffer right[] = {{to_right, from_left, bytes}};
        const tk::RingBuffer left[] = {{to_left, from_right, bytes}};
        PKBW_TRY(tk::ring_shift(ctx, rightward, right, 1));
        PKBW_TRY(tk::ring_shift(ctx, leftward, left, 1));
        PKBW_TRY(add_term<T>(ctx, scaled, from_right, b, d, bias, false, logits));
        PKBW_TRY(add_term<T>(ctx, scaled, from_left, b, d, bias, false, logits));
        to_left = from_right;
        to_right = from_left;
    }
    if (world % 2 == 0) {
        T* received = blocks + (((world - 1) / 2) % 2) * 2 * b * d;
        const tk::RingBuffer right[] = {{to_right, received, bytes}};
        PKBW_TRY(tk::ring_shift(ctx, rightward, right, 1));
        PKBW_TRY(add_term<T>(ctx, scaled, received, b, d, bias, false, logits));
    }
    return 0;
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    PKBW_TRY(tk::dispatch_float(ctx, ctx.input(0).dtype, "58 reference", [&](auto tag) {
        using T = typename decltype(tag)::type;
        return siglip_ring<T>(ctx);
    }));
    return tk::finish(ctx);
}
