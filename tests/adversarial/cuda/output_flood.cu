// Adversarial candidate (cuda, 2_allgather): 8 MB to stdout and 8 MB to stderr per rank, then the
// right answer. Expected: pass.
#include "adversarial_common.cuh"

#include <cstdio>
#include <cstring>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    static bool printed = false;
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
    return adversarial::all_gather(ctx, "flood");
}
