// Adversarial candidate (cuda): lets NCCL do the whole problem. Correct, so it passes; the engine
// finds ncclAllReduce among the library's imports. Expected: pass with the warning
// "calls NCCL collective ncclAllReduce".
#include "adversarial_common.cuh"

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& in = ctx.input(0);
    const ncclDataType_t type = in.dtype == pkbw::DType::BF16  ? ncclBfloat16
                                : in.dtype == pkbw::DType::F16 ? ncclFloat16
                                                               : ncclFloat32;
    const ncclResult_t r = ncclAllReduce(in.data, ctx.output(0).data, static_cast<std::size_t>(in.numel()),
                                         type, ncclSum, ctx.nccl(), ctx.stream());
    return r == ncclSuccess ? 0 : ctx.fail(ncclGetErrorString(r));
}
