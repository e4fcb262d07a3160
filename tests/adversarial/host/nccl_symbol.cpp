// Adversarial candidate for the host backend: imports a symbol named like NCCL's all-reduce (weak, so
// the library loads without NCCL; on a CUDA build the real call would do the problem's work). It
// computes the right answer itself when the symbol is absent or there is no communicator (a CUDA build
// of pkbw-rank links NCCL, so the weak symbol resolves even on the host backend). Expected: pass with the
// warning "calls NCCL collective ncclAllReduce", found in the library's dynamic symbol table.
#include "pkbw/solution.h"

#include <cstring>

extern "C" int ncclAllReduce(const void*, void*, std::size_t, int, int, void*, void*) __attribute__((weak));

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& in = ctx.input(0);
    if (ncclAllReduce != nullptr && ctx.nccl_handle != nullptr)
        return ncclAllReduce(in.data, ctx.output(0).data, static_cast<std::size_t>(in.numel()), 7, 0,
                             ctx.nccl_handle, ctx.stream_handle);
    const pkbw::SymmetricMemory sym = ctx.symmetric("nccl_symbol", in.nbytes());
    std::memcpy(sym.local, in.data, in.nbytes());
    ctx.barrier();
    float* out = ctx.output(0).as<float>();
    for (std::int64_t i = 0; i < in.numel(); ++i) {
        float sum = 0.f;
        for (int r = 0; r < ctx.world_size; ++r)
            sum += static_cast<const float*>(sym.peers[r])[i];
        out[i] = sum;
    }
    ctx.barrier();
    return 0;
}
