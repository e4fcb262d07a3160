// Adversarial candidate (2_allgather): prints 8 MB to stdout and 8 MB to stderr on every rank, then
// computes the right answer. Expected: pass; the logs are capped and only a tail is held in memory.
#include "pkbw/solution.h"

#include <cstdio>
#include <cstring>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    static bool printed = false; // once per process: the flood is the point, not its repetition
    if (!printed) {
        printed = true;
        char line[101];
        std::memset(line, 'x', 99);
        line[99] = '\n';
        line[100] = '\0';
        for (int i = 0; i < 80000; ++i) {
            std::fputs(line, stdout);
            std::fputs(line, stderr);
        }
        std::fflush(stdout);
    }
    const pkbw::TensorView& in = ctx.input(0);
    const std::size_t bytes = in.nbytes();
    const pkbw::SymmetricMemory sym = ctx.symmetric("flood", bytes);
    std::memcpy(sym.local, in.data, bytes);
    ctx.barrier();
    for (int r = 0; r < ctx.world_size; ++r)
        std::memcpy(static_cast<char*>(ctx.output(0).data) + r * bytes, sym.peers[r], bytes);
    ctx.barrier();
    return 0;
}
