// Hand-written sample candidate (not LLM output)
// PKB 85 (rank r returns elements [start_r, start_r + len_r) of the ascending global sort of every
// rank's shard, start_r = r * (T / W) + min(r, T % W), len_r = T / W + (r < T % W)), baseline: the shard
// sizes by all_gather_host, each shard copied into a symmetric buffer, a host barrier, every rank copies
// all shards into one array (one device-to-device copy per peer), a last host barrier, a CUB radix sort
// of the whole array, and this rank's slice copied to the output.
#include "pkbw/solution.h"

#include <algorithm>
#include <cub/cub.cuh>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <string>
#include <vector>

namespace {

template <class T>
int sort_and_slice(const pkbw::Context& ctx, const T* all, long long total, long long start,
                   long long length) {
    T* sorted = static_cast<T*>(ctx.scratch("sort85_sorted", sizeof(T) * (total > 0 ? total : 1)));
    std::size_t bytes = 0;
    cub::DeviceRadixSort::SortKeys(nullptr, bytes, all, sorted, static_cast<int>(total), 0, sizeof(T) * 8,
                                   ctx.stream());
    void* temp = ctx.scratch("sort85_temp", bytes > 0 ? bytes : 1);
    cub::DeviceRadixSort::SortKeys(temp, bytes, all, sorted, static_cast<int>(total), 0, sizeof(T) * 8,
                                   ctx.stream());
    cudaMemcpyAsync(ctx.output(0).data, sorted + start, sizeof(T) * length, cudaMemcpyDeviceToDevice,
                    ctx.stream());
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? 0 : ctx.fail(cudaGetErrorString(err));
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& shard = ctx.input(0);
    const int world = ctx.world_size;
    const long long mine = shard.numel();
    std::vector<long long> sizes(world);
    ctx.all_gather_host(&mine, sizeof mine, sizes.data());
    long long most = 1, total = 0;
    for (long long s : sizes) {
        most = std::max(most, s);
        total += s;
    }
    const std::size_t elem_bytes = pkbw::element_size(shard.dtype);
    // One buffer per size: the shard sizes change with the trial, and a buffer cannot grow.
    const pkbw::SymmetricMemory sym =
        ctx.symmetric(("sort85_baseline_" + std::to_string(most)).c_str(), elem_bytes * most);
    cudaMemcpyAsync(sym.local, shard.data, shard.nbytes(), cudaMemcpyDeviceToDevice, ctx.stream());
    ctx.barrier(); // waits for this rank's stream first
    char* all = static_cast<char*>(ctx.scratch("sort85_all", elem_bytes * (total > 0 ? total : 1)));
    long long at = 0;
    for (int r = 0; r < world; ++r) {
        cudaMemcpyAsync(all + at * elem_bytes, sym.peers[r], elem_bytes * sizes[r], cudaMemcpyDeviceToDevice,
                        ctx.stream());
        at += sizes[r];
    }
    ctx.barrier(); // nobody overwrites the buffer while a peer still reads it
    const long long base = total / world, extra = total % world;
    const long long start = ctx.rank * base + std::min<long long>(ctx.rank, extra);
    const long long length = base + (ctx.rank < extra ? 1 : 0);
    if (length != ctx.output(0).numel()) {
        return ctx.fail("the output does not hold this rank's slice");
    }
    switch (shard.dtype) {
    case pkbw::DType::BF16:
        return sort_and_slice(ctx, reinterpret_cast<const __nv_bfloat16*>(all), total, start, length);
    case pkbw::DType::F16:
        return sort_and_slice(ctx, reinterpret_cast<const __half*>(all), total, start, length);
    case pkbw::DType::F32:
        return sort_and_slice(ctx, reinterpret_cast<const float*>(all), total, start, length);
    case pkbw::DType::F64:
        return sort_and_slice(ctx, reinterpret_cast<const double*>(all), total, start, length);
    default:
        return ctx.fail("dtype must be bf16, f16, f32 or f64");
    }
}
