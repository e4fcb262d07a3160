// Reference for PKB problem 38: pack each destination's column chunk of every third contiguously
// ([B*T*3, W, C/W] -> [W, B*T*3, C/W], C = 512), grouped ncclSend/ncclRecv of equal chunks (all_to_all's
// pairing), then unpack [W, B, T*3*C/W] -> [B, W, T*3*C/W] = the [B, W*T, 3*C/W] output.
#include "pkbw/solution.h"

#include <cstdint>

namespace {

// dst[a, b, f] = src[b, a, f] (dst [A, B, F], src [B, A, F]): the one layout step both sides need.
template <class T>
__global__ void swap_outer(const T* src, T* dst, long long a_n, long long b_n, long long f_n) {
    const long long total = a_n * b_n * f_n;
    for (long long o = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; o < total;
         o += static_cast<long long>(gridDim.x) * blockDim.x) {
        const long long f = o % f_n;
        const long long b = (o / f_n) % b_n;
        const long long a = o / (f_n * b_n);
        dst[o] = src[(b * a_n + a) * f_n + f];
    }
}

template <class T>
void swap_outer_typed(const void* src, void* dst, long long a_n, long long b_n, long long f_n,
                      cudaStream_t s) {
    const long long total = a_n * b_n * f_n;
    const unsigned blocks = static_cast<unsigned>(total / 256 + 1 > 4096 ? 4096 : total / 256 + 1);
    swap_outer<T><<<blocks, 256, 0, s>>>(static_cast<const T*>(src), static_cast<T*>(dst), a_n, b_n, f_n);
}

// The same on raw elements of `size` bytes.
void swap_outer_bytes(const void* src, void* dst, long long a_n, long long b_n, long long f_n,
                      std::size_t size, cudaStream_t s) {
    switch (size) {
    case 2:
        swap_outer_typed<std::uint16_t>(src, dst, a_n, b_n, f_n, s);
        break;
    case 4:
        swap_outer_typed<std::uint32_t>(src, dst, a_n, b_n, f_n, s);
        break;
    case 8:
        swap_outer_typed<std::uint64_t>(src, dst, a_n, b_n, f_n, s);
        break;
    default:
        swap_outer_typed<std::uint8_t>(src, dst, a_n, b_n, f_n * static_cast<long long>(size), s);
    }
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& x = ctx.input(0);
    const int world = ctx.world_size;
    const long long b_n = x.shape[0], t_n = x.shape[1];
    const long long run = x.shape[2] / 3 / world; // elements of one third's column chunk
    const std::size_t size = pkbw::element_size(x.dtype);
    const std::size_t chunk = x.nbytes() / static_cast<std::size_t>(world);
    char* send = static_cast<char*>(ctx.scratch("ulysses38_send", x.nbytes()));
    char* recv = static_cast<char*>(ctx.scratch("ulysses38_recv", x.nbytes()));
    swap_outer_bytes(x.data, send, world, b_n * t_n * 3, run, size, ctx.stream());
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
    swap_outer_bytes(recv, ctx.output(0).data, b_n, world, t_n * 3 * run, size, ctx.stream());
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? 0 : ctx.fail(cudaGetErrorString(err));
}
