// Hand-written sample candidate (not LLM output)
// PKB 69 (every rank's positive scores [P_r] and negatives [P_r, n] gathered in rank order; for each row
// the 1-based position of the positive in sigmoid(cat(pos, neg)) sorted descending, the positive first
// among equal values), baseline: row counts through all_gather_host, each rank's scores copied into a
// symmetric buffer sized for the largest rank, a host barrier, one kernel (a block per row) that reads the
// row from its owner's buffer through peer pointers and counts the negatives whose sigmoid, rounded to the
// dtype as torch stores it, is above the positive's; a last host barrier. bf16 and f32.
#include "pkbw/solution.h"

#include <cuda_bf16.h>
#include <vector>

namespace {

__device__ float load(const float* p, long long i) {
    return p[i];
}
__device__ float load(const __nv_bfloat16* p, long long i) {
    return __bfloat162float(p[i]);
}
__device__ float rounded(float v, const float*) {
    return v;
}
__device__ float rounded(float v, const __nv_bfloat16*) {
    return __bfloat162float(__float2bfloat16(v));
}

// Row `blockIdx.x` of the gathered rows lives on rank `owner` at local row `local`.
template <class T>
__global__ void rank_rows(const void* const* peers, const int* row_owner, const long long* row_local,
                          long long largest, long long n, long long* out) {
    __shared__ unsigned long long above;
    const long long row = blockIdx.x;
    const T* base = static_cast<const T*>(peers[row_owner[row]]);
    const long long i = row_local[row];
    const T* tag = nullptr;
    if (threadIdx.x == 0) {
        above = 0;
    }
    __syncthreads();
    const float positive = rounded(1.0f / (1.0f + expf(-load(base, i))), tag);
    unsigned long long mine = 0;
    for (long long j = threadIdx.x; j < n; j += blockDim.x) {
        mine += rounded(1.0f / (1.0f + expf(-load(base, largest + i * n + j))), tag) > positive ? 1 : 0;
    }
    atomicAdd(&above, mine);
    __syncthreads();
    if (threadIdx.x == 0) {
        out[row] = 1 + static_cast<long long>(above);
    }
}

template <class T>
int run(const pkbw::Context& ctx) {
    const pkbw::TensorView& pos = ctx.input(0);
    const pkbw::TensorView& neg = ctx.input(1);
    const int world = ctx.world_size;
    const long long mine = pos.shape[0], n = neg.shape[1];
    std::vector<long long> counts(world);
    ctx.all_gather_host(&mine, sizeof mine, counts.data());
    long long largest = 0, rows = 0;
    for (long long c : counts) {
        largest = c > largest ? c : largest;
        rows += c;
    }
    std::vector<int> owner;
    std::vector<long long> local;
    for (int p = 0; p < world; ++p) {
        for (long long i = 0; i < counts[p]; ++i) {
            owner.push_back(p);
            local.push_back(i);
        }
    }
    int* owner_dev = static_cast<int*>(ctx.scratch("gnn69_owner", sizeof(int) * rows));
    long long* local_dev = static_cast<long long*>(ctx.scratch("gnn69_local", sizeof(long long) * rows));
    cudaMemcpyAsync(owner_dev, owner.data(), sizeof(int) * rows, cudaMemcpyHostToDevice, ctx.stream());
    cudaMemcpyAsync(local_dev, local.data(), sizeof(long long) * rows, cudaMemcpyHostToDevice, ctx.stream());
    const pkbw::SymmetricMemory sym = ctx.symmetric("gnn69_baseline", sizeof(T) * largest * (1 + n));
    T* buf = static_cast<T*>(sym.local);
    cudaMemcpyAsync(buf, pos.data, pos.nbytes(), cudaMemcpyDeviceToDevice, ctx.stream());
    cudaMemcpyAsync(buf + largest, neg.data, neg.nbytes(), cudaMemcpyDeviceToDevice, ctx.stream());
    ctx.barrier(); // waits for this rank's stream first (the host vectors above stay alive until then)
    rank_rows<T><<<static_cast<unsigned>(rows), 256, 0, ctx.stream()>>>(
        sym.peers_device, owner_dev, local_dev, largest, n, ctx.output(0).as<long long>());
    ctx.barrier();
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? 0 : ctx.fail(cudaGetErrorString(err));
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    switch (ctx.input(0).dtype) {
    case pkbw::DType::BF16:
        return run<__nv_bfloat16>(ctx);
    case pkbw::DType::F32:
        return run<float>(ctx);
    default:
        return ctx.fail("this sample handles bf16 and f32");
    }
}
