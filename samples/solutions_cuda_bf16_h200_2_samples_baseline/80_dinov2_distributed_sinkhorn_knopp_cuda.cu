// Hand-written sample candidate (not LLM output)
// PKB 80 (distributed Sinkhorn-Knopp), baseline, fp32: Q stays in the input's [B, P] layout in the
// output. Each all-reduce writes this rank's partial sums into its own region of one symmetric
// buffer; after a host barrier the consuming kernel adds the peers' regions itself.
#include "pkbw/solution.h"

#include <cstdint>

namespace {

constexpr int kThreads = 256;

__device__ float block_sum(float v) {
    __shared__ float part[kThreads];
    part[threadIdx.x] = v;
    __syncthreads();
    for (int step = kThreads / 2; step > 0; step >>= 1) {
        if (threadIdx.x < step)
            part[threadIdx.x] += part[threadIdx.x + step];
        __syncthreads();
    }
    const float total = part[0];
    __syncthreads();
    return total;
}

__device__ float peer_sum(void* const* peers, int world, long long index) {
    float s = 0.f;
    for (int r = 0; r < world; ++r)
        s += static_cast<const float*>(peers[r])[index];
    return s;
}

__global__ void exp_rows(const float* t, float* q, float* sample_sum, long long protos, float temp) {
    float s = 0.f;
    for (long long p = threadIdx.x; p < protos; p += kThreads) {
        const float v = expf(t[blockIdx.x * protos + p] / temp);
        q[blockIdx.x * protos + p] = v;
        s += v;
    }
    s = block_sum(s);
    if (threadIdx.x == 0)
        sample_sum[blockIdx.x] = s;
}

__global__ void local_mass(const float* sample_sum, long long batch, const std::int64_t* n_masked,
                           float* region) {
    float s = 0.f;
    for (long long b = threadIdx.x; b < batch; b += kThreads)
        s += sample_sum[b];
    s = block_sum(s);
    if (threadIdx.x == 0) {
        region[0] = static_cast<float>(n_masked[0]);
        region[1] = s;
    }
}

__global__ void divide_by_mass(float* q, long long count, void* const* peers, int world) {
    const long long i = blockIdx.x * static_cast<long long>(kThreads) + threadIdx.x;
    if (i < count)
        q[i] /= peer_sum(peers, world, 1);
}

__global__ void prototype_sums(const float* q, float* sums, long long batch, long long protos) {
    const long long p = blockIdx.x * static_cast<long long>(kThreads) + threadIdx.x;
    if (p >= protos)
        return;
    float s = 0.f;
    for (long long b = 0; b < batch; ++b)
        s += q[b * protos + p];
    sums[p] = s;
}

__global__ void normalise_rows(float* q, long long protos, void* const* peers, int world,
                               long long sums_offset) {
    float* row = q + blockIdx.x * protos;
    float s = 0.f;
    for (long long p = threadIdx.x; p < protos; p += kThreads) {
        const float v = row[p] / (peer_sum(peers, world, sums_offset + p) * static_cast<float>(protos));
        row[p] = v;
        s += v;
    }
    s = block_sum(s);
    const float inv = 1.f / (s * peer_sum(peers, world, 0));
    for (long long p = threadIdx.x; p < protos; p += kThreads)
        row[p] *= inv;
}

__global__ void multiply_by_batch(float* q, long long count, void* const* peers, int world) {
    const long long i = blockIdx.x * static_cast<long long>(kThreads) + threadIdx.x;
    if (i < count)
        q[i] *= peer_sum(peers, world, 0);
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& t = ctx.input(0);
    if (t.dtype != pkbw::DType::F32) {
        return ctx.fail("sinkhorn baseline: teacher_output must be f32");
    }
    const long long batch = t.shape[0], protos = t.shape[1], count = batch * protos;
    const float temp = static_cast<float>(ctx.param("teacher_temp", 0.07));
    const int iterations = static_cast<int>(ctx.param("n_iterations", 3));
    const long long region = protos + 2; // region 0: [batch, mass]; region 1 + i: iteration i's sums
    const pkbw::SymmetricMemory sym = ctx.symmetric(
        "sinkhorn_baseline", static_cast<std::size_t>((iterations + 1) * region) * sizeof(float));
    float* mine = static_cast<float*>(sym.local);
    auto* sample_sum = static_cast<float*>(ctx.scratch("sinkhorn_baseline_rows", batch * sizeof(float)));
    float* q = ctx.output(0).as<float>();
    cudaStream_t s = ctx.stream();
    const unsigned elem_blocks = static_cast<unsigned>((count + kThreads - 1) / kThreads);
    exp_rows<<<static_cast<unsigned>(batch), kThreads, 0, s>>>(t.as<const float>(), q, sample_sum, protos,
                                                               temp);
    local_mass<<<1, kThreads, 0, s>>>(sample_sum, batch, ctx.input(1).as<const std::int64_t>(), mine);
    ctx.barrier();
    divide_by_mass<<<elem_blocks, kThreads, 0, s>>>(q, count, sym.peers_device, ctx.world_size);
    for (int it = 0; it < iterations; ++it) {
        const long long offset = (it + 1) * region;
        prototype_sums<<<static_cast<unsigned>((protos + kThreads - 1) / kThreads), kThreads, 0, s>>>(
            q, mine + offset, batch, protos);
        ctx.barrier();
        normalise_rows<<<static_cast<unsigned>(batch), kThreads, 0, s>>>(q, protos, sym.peers_device,
                                                                         ctx.world_size, offset);
    }
    multiply_by_batch<<<elem_blocks, kThreads, 0, s>>>(q, count, sym.peers_device, ctx.world_size);
    ctx.barrier();
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? 0 : ctx.fail(cudaGetErrorString(err));
}
