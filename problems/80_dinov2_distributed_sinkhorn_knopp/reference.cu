// Reference for PKB problem 80 (fp32 throughout). Q lives in the output buffer in the input's
// [B, P] layout: a prototype's sum (PKB's row of Qᵀ) is a column sum here and a sample's sum (PKB's
// column) is a row sum. Kernels: exp with per-sample partial mass, tk::row_sums for the mass and
// tk::column_sums for the prototype sums, ncclAllReduce of [batch, mass] and of each iteration's prototype
// sums, and scaling kernels that apply PKB's divisions in its order (each a separate fp32 rounding, as
// torch's in-place ops).
#include "pkbw/solution.h"
#include "pkbw/toolkit/check.cuh"
#include "pkbw/toolkit/reduce.cuh"
#include "pkbw/toolkit/types.cuh"

#include <cstdint>

namespace tk = pkbw::tk;

namespace {

constexpr int kThreads = 256;

__device__ float block_sum(float v) {
    return tk::block_reduce<kThreads>(v, tk::SumOp{});
}

// Block per sample b: q[b, :] = exp(t[b, :] / temp); sample_sum[b] = Σ_p q[b, p].
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

// scalars[0] = the sample count as float (PKB's .to(q.dtype) before its all-reduce).
__global__ void sample_count(const std::int64_t* n_masked, float* scalars) {
    scalars[0] = static_cast<float>(n_masked[0]);
}

__global__ void divide_all(float* q, long long count, const float* scalars) {
    const long long i = blockIdx.x * static_cast<long long>(kThreads) + threadIdx.x;
    if (i < count)
        q[i] /= scalars[1];
}

// Block per sample b: q /= proto_sum; q /= P; then q /= Σ_p q[b, p]; q /= total_batch.
__global__ void normalise_rows(float* q, const float* proto_sum, long long protos, const float* scalars) {
    float* row = q + blockIdx.x * protos;
    const float n_protos = static_cast<float>(protos);
    float s = 0.f;
    for (long long p = threadIdx.x; p < protos; p += kThreads) {
        const float v = row[p] / proto_sum[p] / n_protos;
        row[p] = v;
        s += v;
    }
    s = block_sum(s);
    const float total_batch = scalars[0];
    for (long long p = threadIdx.x; p < protos; p += kThreads)
        row[p] = row[p] / s / total_batch;
}

__global__ void multiply_all(float* q, long long count, const float* scalars) {
    const long long i = blockIdx.x * static_cast<long long>(kThreads) + threadIdx.x;
    if (i < count)
        q[i] *= scalars[0];
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& t = ctx.input(0);
    if (t.dtype != pkbw::DType::F32) {
        return ctx.fail("80 reference: teacher_output must be f32");
    }
    const long long batch = t.shape[0], protos = t.shape[1], count = batch * protos;
    const float temp = static_cast<float>(ctx.param("teacher_temp", 0.07));
    const int iterations = static_cast<int>(ctx.param("n_iterations", 3));
    float* q = ctx.output(0).as<float>();
    auto* sample_sum = static_cast<float*>(ctx.scratch("sinkhorn_sample_sum", batch * sizeof(float)));
    auto* proto_sum = static_cast<float*>(ctx.scratch("sinkhorn_proto_sum", protos * sizeof(float)));
    auto* scalars = static_cast<float*>(ctx.scratch("sinkhorn_scalars", 2 * sizeof(float)));
    cudaStream_t s = ctx.stream();
    const unsigned elem_blocks = static_cast<unsigned>((count + kThreads - 1) / kThreads);
    exp_rows<<<static_cast<unsigned>(batch), kThreads, 0, s>>>(t.as<const float>(), q, sample_sum, protos,
                                                               temp);
    sample_count<<<1, 1, 0, s>>>(ctx.input(1).as<const std::int64_t>(), scalars);
    PKBW_TRY(tk::row_sums(ctx, tk::Elements<float>{sample_sum, batch}, 1, batch, scalars + 1));
    PKBW_CHECK(ctx, ncclAllReduce(scalars, scalars, 2, ncclFloat32, ncclSum, ctx.nccl(), s));
    divide_all<<<elem_blocks, kThreads, 0, s>>>(q, count, scalars);
    for (int it = 0; it < iterations; ++it) {
        PKBW_TRY(tk::column_sums(ctx, tk::Elements<float>{q, protos}, batch, protos, proto_sum));
        PKBW_CHECK(ctx, ncclAllReduce(proto_sum, proto_sum, protos, ncclFloat32, ncclSum, ctx.nccl(), s));
        normalise_rows<<<static_cast<unsigned>(batch), kThreads, 0, s>>>(q, proto_sum, protos, scalars);
    }
    multiply_all<<<elem_blocks, kThreads, 0, s>>>(q, count, scalars);
    return tk::finish(ctx);
}
