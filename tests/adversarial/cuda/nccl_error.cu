// Adversarial candidate (cuda): calls ncclAllReduce with a null communicator on every rank; NCCL
// refuses with ncclInvalidArgument and the candidate reports it. Expected: error, the message names
// NCCL's "invalid argument".
#include "adversarial_common.cuh"

#include <string>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& in = ctx.input(0);
    const ncclResult_t r = ncclAllReduce(in.data, ctx.output(0).data, static_cast<std::size_t>(in.numel()),
                                         ncclBfloat16, ncclSum, nullptr, ctx.stream());
    if (r == ncclSuccess)
        return 0;
    static std::string message;
    message = std::string("ncclAllReduce: ") + ncclGetErrorString(r);
    return ctx.fail(message.c_str());
}
