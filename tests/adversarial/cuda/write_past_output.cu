// Adversarial candidate (cuda): the right answer, plus one element written past the end of the output
// and one before its start. Expected: invalid_output naming the output.
#include "adversarial_common.cuh"

namespace {
__global__ void scribble(unsigned char* out, long long bytes) {
    out[bytes + 7] = 1;
    out[-1] = 1;
}
} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const int status = adversarial::all_reduce(ctx, "oob");
    scribble<<<1, 1, 0, ctx.stream()>>>(static_cast<unsigned char*>(ctx.output(0).data),
                                        static_cast<long long>(ctx.output(0).nbytes()));
    return status;
}
