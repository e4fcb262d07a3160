// A common habit, not a cheat: each call copies a small per-call table from a local host vector
// (pageable memory, freed when the call returns) to the device with cudaMemcpyAsync, and a kernel reads
// it. Launched, that is correct: the copy reads the vector during the call. Captured in a CUDA graph,
// the copy would be replayed from the vector's freed memory (on the H200 a sample doing this crashed its
// perf run with an illegal address). Expected for perf: pass, with no graph figure and the reason named
// ("from pageable host memory"), not a crash or a failed check.
#include "adversarial_common.cuh"

#include <vector>

__global__ void scale_by_table(void* out, long long count, pkbw::DType t, const float* table) {
    for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < count;
         i += static_cast<long long>(gridDim.x) * blockDim.x) {
        adversarial::store(out, i, t, adversarial::load(out, i, t) * table[i % 64]);
    }
}

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& in = ctx.input(0);
    if (ncclAllReduce(in.data, ctx.output(0).data, static_cast<size_t>(in.numel()),
                      pkbw::nccl_dtype(in.dtype), ncclSum, ctx.nccl(), ctx.stream()) != ncclSuccess)
        return ctx.fail("ncclAllReduce failed");
    std::vector<float> table(64, 1.0f); // the call's own table, gone when it returns
    auto* device_table = static_cast<float*>(ctx.scratch("host_copy_table", sizeof(float) * table.size()));
    cudaMemcpyAsync(device_table, table.data(), sizeof(float) * table.size(), cudaMemcpyHostToDevice,
                    ctx.stream());
    scale_by_table<<<132, 512, 0, ctx.stream()>>>(ctx.output(0).data, in.numel(), in.dtype, device_table);
    return cudaGetLastError() == cudaSuccess ? 0 : ctx.fail("launch failed");
}
