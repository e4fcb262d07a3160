// Adversarial candidate (cuda): lets NCCL do the whole problem, but looks ncclAllReduce up at run time
// so that the library imports no NCCL symbol. Correct, so it passes; the symbol check sees nothing and
// the traced pass (--trace) shows NCCL's AllReduce kernels inside the candidate's iterations. Expected:
// pass with the warning "runs NCCL kernels (AllReduce) in its traced iterations".
#include "adversarial_common.cuh"

#include <dlfcn.h>
#include <string>

namespace {
using AllReduce = ncclResult_t (*)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                                   cudaStream_t);
}

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    // Built from pieces so that not even the string table names the function.
    const std::string name = std::string("nccl") + "All" + "Reduce";
    const auto all_reduce = reinterpret_cast<AllReduce>(::dlsym(RTLD_DEFAULT, name.c_str()));
    if (!all_reduce)
        return ctx.fail(("dlsym found no " + name).c_str());
    const pkbw::TensorView& in = ctx.input(0);
    const ncclResult_t r = all_reduce(in.data, ctx.output(0).data, static_cast<std::size_t>(in.numel()),
                                      pkbw::nccl_dtype(in.dtype), ncclSum, ctx.nccl(), ctx.stream());
    return r == ncclSuccess ? 0 : ctx.fail("the looked-up all-reduce failed");
}
