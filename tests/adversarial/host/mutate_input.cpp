// Adversarial candidate: sums in place into its input (saving an allocation) and copies the result
// out. The result is right; the input is not what it was. Expected: invalid_output "modified input".
#include "pkbw/solution.h"

#include <cstring>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& in = ctx.input(0);
    const pkbw::SymmetricMemory sym = ctx.symmetric("mutate", in.nbytes());
    std::memcpy(sym.local, in.data, in.nbytes());
    ctx.barrier();
    float* mine = in.as<float>();
    for (std::int64_t i = 0; i < in.numel(); ++i) {
        for (int r = 0; r < ctx.world_size; ++r)
            if (r != ctx.rank)
                mine[i] += static_cast<const float*>(sym.peers[r])[i];
    }
    std::memcpy(ctx.output(0).data, mine, in.nbytes());
    ctx.barrier();
    return 0;
}
