// Hand-written sample candidate (not LLM output)
// PKB 12 (all-gather A along K, then A @ B_r), tuned. Versus the baseline (publish copy, host
// barrier, assemble kernel into scratch, GEMM, host barrier):
//  - the full A [M, K] lives in a symmetric buffer on every rank, and one kernel pushes this
//    rank's shard with 16-byte stores straight into column block `rank` of every rank's A (the
//    GEMM's input layout): no publish copy, no gather buffer, no concatenation pass;
//  - device-side barriers on the signal pads (per block, self-resetting) instead of ctx.barrier(),
//    no NCCL; cuBLAS (cached handle, fp32 compute, as the reference) does the math on the local A.
// Ordering: the kernel opens with a barrier, so no rank writes into a peer's A before the peer's
// previous GEMM (earlier on its stream) has finished reading it; it closes with a barrier, and
// since the GEMM starts only when every block of this rank has passed it, every shard of every
// rank has landed by then.
#include "pkbw/solution.h"

#include <cstdint>
#include <cublas_v2.h>

namespace {

constexpr int kThreads = 512;
constexpr int kMaxBlocks = 128;
constexpr int kChannels = 2;

__device__ void block_barrier(std::uint32_t* const* pads, int rank, int world, int channel) {
    __syncthreads();
    if (threadIdx.x < world) {
        const int peer = threadIdx.x;
        const int slot = (channel * gridDim.x + blockIdx.x) * world;
        __threadfence_system(); // this block's (remote) writes are visible before the signal
        // Signal 0 -> 1 in the peer's pad, consume 1 -> 0 in ours: the pad ends zeroed.
        while (atomicCAS_system(pads[peer] + slot + rank, 0u, 1u) != 0u) {
        }
        while (atomicCAS_system(pads[rank] + slot + peer, 1u, 0u) != 1u) {
        }
        __threadfence_system();
    }
    __syncthreads();
}

// shard[row][col] (row_bytes per row) -> A[row][rank * row_bytes + col] on every rank. row_bytes is
// a multiple of 16, so a 16-byte unit never straddles rows and every destination is aligned.
__global__ void push_shard(const char* shard, long long shard_bytes, long long row_bytes,
                           long long a_row_bytes, void* const* peers, std::uint32_t* const* pads, int rank,
                           int world, bool vector) {
    block_barrier(pads, rank, world, 0);
    const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
    for (long long u = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; u * 16 < shard_bytes;
         u += stride) {
        const long long off = u * 16;
        const long long target = off / row_bytes * a_row_bytes + rank * row_bytes + off % row_bytes;
        if (vector) {
            const uint4 v = __ldg(reinterpret_cast<const uint4*>(shard + off));
            for (int i = 0; i < world; ++i) {
                const int p = (rank + i) % world; // every rank starts with a different peer
                *reinterpret_cast<uint4*>(static_cast<char*>(peers[p]) + target) = v;
            }
        } else {
            for (int i = 0; i < world; ++i) {
                char* dst = static_cast<char*>(peers[(rank + i) % world]) + target;
                for (int k = 0; k < 16; ++k)
                    dst[k] = shard[off + k];
            }
        }
    }
    block_barrier(pads, rank, world, 1);
}

bool cuda_type(pkbw::DType dtype, cudaDataType_t& type) {
    switch (dtype) {
    case pkbw::DType::BF16:
        type = CUDA_R_16BF;
        return true;
    case pkbw::DType::F16:
        type = CUDA_R_16F;
        return true;
    case pkbw::DType::F32:
        type = CUDA_R_32F;
        return true;
    default:
        return false;
    }
}

// One handle per process, never destroyed (a static destructor may run after the CUDA context).
cublasHandle_t handle() {
    static cublasHandle_t h = [] {
        cublasHandle_t created = nullptr;
        cublasCreate(&created);
        return created;
    }();
    return h;
}

int grid_for(long long units, int world) {
    long long blocks = (units + kThreads - 1) / kThreads;
    const long long pad_limit = pkbw::kSignalPadWords / (kChannels * world);
    blocks = blocks < kMaxBlocks ? blocks : kMaxBlocks;
    blocks = blocks < pad_limit ? blocks : pad_limit;
    return static_cast<int>(blocks < 1 ? 1 : blocks);
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& a_local = ctx.input(0);
    const pkbw::TensorView& b = ctx.input(1);
    const int world = ctx.world_size;
    cudaDataType_t type;
    if (!cuda_type(a_local.dtype, type)) {
        return ctx.fail("allgather-gemm tuned: dtype must be bf16, f16 or f32");
    }
    const long long m = a_local.shape[0], kl = a_local.shape[1], k = b.shape[0], n = b.shape[1];
    const long long elem = static_cast<long long>(pkbw::element_size(a_local.dtype));
    const long long row_bytes = kl * elem;
    if (kl * world != k || row_bytes % 16 != 0) {
        return ctx.fail("allgather-gemm tuned: needs K = W * K/W with K/W * sizeof(dtype) a multiple of 16");
    }
    const pkbw::SymmetricMemory sym =
        ctx.symmetric("ag_gemm_tuned_a", static_cast<std::size_t>(m * k * elem));
    const long long shard_bytes = m * row_bytes;
    const bool vector = reinterpret_cast<std::uintptr_t>(a_local.data) % 16 == 0;
    push_shard<<<grid_for(shard_bytes / 16, world), kThreads, 0, ctx.stream()>>>(
        static_cast<const char*>(a_local.data), shard_bytes, row_bytes, k * elem, sym.peers_device,
        sym.signal_pads_device, ctx.rank, world, vector);
    // Row-major C = A B is column-major C^T = B^T A^T: swap the operands, no transposes.
    const float alpha = 1.f, beta = 0.f;
    cublasSetStream(handle(), ctx.stream());
    const cublasStatus_t st = cublasGemmEx(
        handle(), CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(n), static_cast<int>(m), static_cast<int>(k),
        &alpha, b.data, type, static_cast<int>(n), sym.local, type, static_cast<int>(k), &beta,
        ctx.output(0).data, type, static_cast<int>(n), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    if (st != CUBLAS_STATUS_SUCCESS) {
        return ctx.fail(cublasGetStatusString(st));
    }
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? 0 : ctx.fail(cudaGetErrorString(err));
}
