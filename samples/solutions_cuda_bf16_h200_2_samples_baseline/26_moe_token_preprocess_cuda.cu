// Hand-written sample candidate (not LLM output)
// PKB 26 (MoE token preprocessing: tokens per expert from a one-hot mask [8, 2, M], the split sizes
// to and from every rank, every rank's counts of this rank's experts), baseline: one block per
// expert sums its 2M mask values into this rank's slot of a symmetric array; after a host barrier one
// thread reads this rank's experts' counts from every peer and writes the four outputs; a second
// barrier keeps the next call from overwriting a slot a peer still reads.
#include "pkbw/solution.h"

constexpr int kThreads = 256;
constexpr int kExperts = 8;

namespace {

__global__ void count_tokens(const float* mask, long long per_expert, float* counts) {
    __shared__ float part[kThreads];
    float s = 0.f;
    for (long long i = threadIdx.x; i < per_expert; i += kThreads)
        s += mask[blockIdx.x * per_expert + i];
    part[threadIdx.x] = s;
    __syncthreads();
    for (int step = kThreads / 2; step > 0; step >>= 1) {
        if (threadIdx.x < step)
            part[threadIdx.x] += part[threadIdx.x + step];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        counts[blockIdx.x] = part[0];
}

__global__ void splits(void* const* peers, int world, int rank, long long* input_splits,
                       long long* output_splits, float* per_local, float* sum_local) {
    const int local = kExperts / world;
    const float* mine = static_cast<const float*>(peers[rank]);
    for (int d = 0; d < world; ++d) {
        float to_d = 0.f;
        for (int j = 0; j < local; ++j)
            to_d += mine[d * local + j];
        input_splits[d] = static_cast<long long>(to_d);
    }
    for (int j = 0; j < local; ++j)
        sum_local[j] = 0.f;
    for (int s = 0; s < world; ++s) {
        const volatile float* theirs = static_cast<const volatile float*>(peers[s]);
        float from_s = 0.f;
        for (int j = 0; j < local; ++j) {
            const float c = theirs[rank * local + j];
            per_local[s * local + j] = c;
            from_s += c;
            sum_local[j] += c;
        }
        output_splits[s] = static_cast<long long>(from_s);
    }
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& mask = ctx.input(0);
    if (mask.dtype != pkbw::DType::F32 || mask.ndim != 3 || mask.shape[0] != kExperts ||
        kExperts % ctx.world_size != 0) {
        return ctx.fail("this sample expects an fp32 expert_mask [8, top_k, M] with W dividing 8");
    }
    const pkbw::SymmetricMemory counts = ctx.symmetric("moe26_baseline", kExperts * sizeof(float));
    count_tokens<<<kExperts, kThreads, 0, ctx.stream()>>>(static_cast<const float*>(mask.data),
                                                          mask.shape[1] * mask.shape[2],
                                                          static_cast<float*>(counts.local));
    ctx.barrier();
    splits<<<1, 1, 0, ctx.stream()>>>(counts.peers_device, ctx.world_size, ctx.rank,
                                      ctx.output(0).as<long long>(), ctx.output(1).as<long long>(),
                                      ctx.output(2).as<float>(), ctx.output(3).as<float>());
    ctx.barrier();
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? 0 : ctx.fail(cudaGetErrorString(err));
}
