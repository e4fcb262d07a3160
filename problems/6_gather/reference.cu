// Reference for PKB problem 6: NCCL point-to-point gather (NCCL has no gather) onto `dst`; the other
// ranks return their own input, as PKB's reference does.
#include "pkbw/solution.h"

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& in = ctx.input(0);
    const pkbw::TensorView& out = ctx.output(0);
    const int dst = static_cast<int>(ctx.param("dst", 0));
    const std::size_t bytes = in.nbytes();
    char* o = static_cast<char*>(out.data);
    cudaMemcpyAsync(ctx.rank == dst ? o + dst * bytes : o, in.data, bytes, cudaMemcpyDeviceToDevice,
                    ctx.stream());
    ncclResult_t rc = ncclGroupStart();
    if (ctx.rank == dst) {
        for (int r = 0; r < ctx.world_size && rc == ncclSuccess; ++r) {
            if (r != dst) {
                rc = ncclRecv(o + r * bytes, bytes, ncclUint8, r, ctx.nccl(), ctx.stream());
            }
        }
    } else {
        rc = ncclSend(in.data, bytes, ncclUint8, dst, ctx.nccl(), ctx.stream());
    }
    const ncclResult_t end = ncclGroupEnd();
    if (rc == ncclSuccess) {
        rc = end;
    }
    return rc == ncclSuccess ? 0 : ctx.fail(ncclGetErrorString(rc));
}
