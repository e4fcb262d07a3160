// Reference for PKB problem 37: pack each destination's sequence chunk contiguously, zero where the
// padded position is past T ([B, W, Tc, H*D] -> [W, B, Tc, H*D]), grouped ncclSend/ncclRecv of equal
// chunks (all_to_all's pairing), then unpack [W, B*Tc, H*D] -> [B*Tc, W, H*D] = [B, Tc, W*H, D].
#include "pkbw/solution.h"

#include <cstdint>

namespace {

// dst[a, b, f] = src[b * src_b_stride + a * f_n + f] when a * f_n + f < limit, else 0.
// dst is [A, B, F]; src is B blocks of `limit` valid elements (padding reads as zero).
template <class T>
__global__ void swap_outer_padded(const T* src, T* dst, long long a_n, long long b_n, long long f_n,
                                  long long src_b_stride, long long limit) {
    const long long total = a_n * b_n * f_n;
    for (long long o = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; o < total;
         o += static_cast<long long>(gridDim.x) * blockDim.x) {
        const long long f = o % f_n;
        const long long b = (o / f_n) % b_n;
        const long long a = o / (f_n * b_n);
        const long long inner = a * f_n + f;
        dst[o] = inner < limit ? src[b * src_b_stride + inner] : T(0);
    }
}

template <class T>
void launch(const void* src, void* dst, long long a_n, long long b_n, long long f_n, long long stride,
            long long limit, cudaStream_t s) {
    const long long total = a_n * b_n * f_n;
    const unsigned blocks = static_cast<unsigned>(total / 256 + 1 > 4096 ? 4096 : total / 256 + 1);
    swap_outer_padded<T><<<blocks, 256, 0, s>>>(static_cast<const T*>(src), static_cast<T*>(dst), a_n, b_n,
                                                f_n, stride, limit);
}

void swap_bytes(const void* src, void* dst, long long a_n, long long b_n, long long f_n, long long stride,
                long long limit, std::size_t size, cudaStream_t s) {
    switch (size) {
    case 2:
        launch<std::uint16_t>(src, dst, a_n, b_n, f_n, stride, limit, s);
        break;
    case 4:
        launch<std::uint32_t>(src, dst, a_n, b_n, f_n, stride, limit, s);
        break;
    case 8:
        launch<std::uint64_t>(src, dst, a_n, b_n, f_n, stride, limit, s);
        break;
    default: {
        const long long k = static_cast<long long>(size);
        launch<std::uint8_t>(src, dst, a_n, b_n, f_n * k, stride * k, limit * k, s);
    }
    }
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& x = ctx.input(0);
    const pkbw::TensorView& out = ctx.output(0);
    const int world = ctx.world_size;
    const long long b_n = x.shape[0], t_n = x.shape[1], chunk_t = out.shape[1];
    const long long token = x.shape[2] * x.shape[3];
    const std::size_t size = pkbw::element_size(x.dtype);
    const std::size_t chunk = static_cast<std::size_t>(b_n * chunk_t * token) * size; // per peer
    char* send = static_cast<char*>(ctx.scratch("ulysses37_send", chunk * world));
    char* recv = static_cast<char*>(ctx.scratch("ulysses37_recv", chunk * world));
    swap_bytes(x.data, send, world, b_n, chunk_t * token, t_n * token, t_n * token, size, ctx.stream());
    ncclResult_t rc = ncclGroupStart();
    for (int r = 0; r < world && rc == ncclSuccess; ++r) {
        rc = ncclSend(send + r * chunk, chunk, ncclUint8, r, ctx.nccl(), ctx.stream());
        if (rc == ncclSuccess) {
            rc = ncclRecv(recv + r * chunk, chunk, ncclUint8, r, ctx.nccl(), ctx.stream());
        }
    }
    const ncclResult_t end = ncclGroupEnd();
    if (rc != ncclSuccess || end != ncclSuccess) {
        return ctx.fail(ncclGetErrorString(rc != ncclSuccess ? rc : end));
    }
    const long long per_peer = b_n * chunk_t * token; // elements of one received chunk
    swap_bytes(recv, out.data, b_n * chunk_t, world, token, per_peer, per_peer, size, ctx.stream());
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? 0 : ctx.fail(cudaGetErrorString(err));
}
