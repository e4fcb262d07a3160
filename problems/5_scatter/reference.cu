// Reference for PKB problem 5: the source sends chunk i to rank i with NCCL point-to-point (NCCL has
// no scatter); every rank receives its chunk into the output.
#include "pkbw/solution.h"

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& in = ctx.input(0);
    const pkbw::TensorView& out = ctx.output(0);
    const int src = static_cast<int>(ctx.param("src", 0));
    const std::size_t chunk = out.nbytes();
    if (ctx.rank == src) {
        cudaMemcpyAsync(out.data, static_cast<const char*>(in.data) + src * chunk, chunk,
                        cudaMemcpyDeviceToDevice, ctx.stream());
    }
    ncclResult_t rc = ncclGroupStart();
    if (ctx.rank == src) {
        for (int r = 0; r < ctx.world_size && rc == ncclSuccess; ++r) {
            if (r != src) {
                rc = ncclSend(static_cast<const char*>(in.data) + r * chunk, chunk, ncclUint8, r, ctx.nccl(),
                              ctx.stream());
            }
        }
    } else {
        rc = ncclRecv(out.data, chunk, ncclUint8, src, ctx.nccl(), ctx.stream());
    }
    const ncclResult_t end = ncclGroupEnd();
    if (rc == ncclSuccess) {
        rc = end;
    }
    return rc == ncclSuccess ? 0 : ctx.fail(ncclGetErrorString(rc));
}
