// Reference for PKB problem 33: chunk j of x (rows j*M/W ..) is contiguous, so it is sent as is
// with grouped ncclSend/ncclRecv (all_to_all's pairing) into a [W, M/W, N] staging buffer, which a
// permute kernel turns into [M/W, W, N] = the [M/W, W*N] output.
#include "pkbw/solution.h"

#include <cstdint>

namespace {

// out[i, r, c] = staged[r, i, c] in units of T (any trivially copyable element of the dtype's size).
template <class T>
__global__ void interleave_chunks(const T* staged, T* out, long long rows, int world, long long cols) {
    const long long total = rows * world * cols;
    for (long long o = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; o < total;
         o += static_cast<long long>(gridDim.x) * blockDim.x) {
        const long long c = o % cols;
        const long long r = (o / cols) % world;
        const long long i = o / (cols * world);
        out[o] = staged[(r * rows + i) * cols + c];
    }
}

template <class T>
void launch(const void* staged, void* out, long long rows, int world, long long cols, cudaStream_t s) {
    const long long total = rows * world * cols;
    const unsigned blocks = static_cast<unsigned>(total / 256 + 1 > 4096 ? 4096 : total / 256 + 1);
    interleave_chunks<T>
        <<<blocks, 256, 0, s>>>(static_cast<const T*>(staged), static_cast<T*>(out), rows, world, cols);
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& x = ctx.input(0);
    const int world = ctx.world_size;
    const long long rows = x.shape[0] / world, cols = x.shape[1];
    const std::size_t chunk = x.nbytes() / static_cast<std::size_t>(world);
    char* staged = static_cast<char*>(ctx.scratch("ulysses_a2a_staged", x.nbytes()));
    const char* send = static_cast<const char*>(x.data);
    ncclResult_t rc = ncclGroupStart();
    for (int r = 0; r < world && rc == ncclSuccess; ++r) {
        rc = ncclSend(send + r * chunk, chunk, ncclUint8, r, ctx.nccl(), ctx.stream());
        if (rc == ncclSuccess) {
            rc = ncclRecv(staged + r * chunk, chunk, ncclUint8, r, ctx.nccl(), ctx.stream());
        }
    }
    const ncclResult_t end = ncclGroupEnd();
    if (rc != ncclSuccess || end != ncclSuccess) {
        return ctx.fail(ncclGetErrorString(rc != ncclSuccess ? rc : end));
    }
    void* out = ctx.output(0).data;
    switch (pkbw::element_size(x.dtype)) {
    case 2:
        launch<std::uint16_t>(staged, out, rows, world, cols, ctx.stream());
        break;
    case 4:
        launch<std::uint32_t>(staged, out, rows, world, cols, ctx.stream());
        break;
    case 8:
        launch<std::uint64_t>(staged, out, rows, world, cols, ctx.stream());
        break;
    default:
        launch<std::uint8_t>(staged, out, rows, world,
                             cols * static_cast<long long>(pkbw::element_size(x.dtype)), ctx.stream());
    }
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? 0 : ctx.fail(cudaGetErrorString(err));
}
