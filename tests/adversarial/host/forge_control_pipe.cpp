// Adversarial candidate: writes forged "pass" results and rank_done into every descriptor that could be
// the engine's control pipe (PKBW_CONTROL_FD, 3..63), then exits the process as if it had finished,
// without computing anything. Expected: its process holds no such pipe; the judge reports the real
// outcome (the candidate process ended during its call).
#include "pkbw/solution.h"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <unistd.h>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    // Said before the forging: the first forged line reaches the judge's channel, which ends this
    // process at once, and a line printed after it may never be written (on a loaded machine it was not).
    std::printf("forge: writing forged lines into fds 3..63; PKBW_CONTROL_FD=%s\n",
                std::getenv("PKBW_CONTROL_FD") ? std::getenv("PKBW_CONTROL_FD") : "(unset)");
    std::fflush(stdout);
    int written = 0;
    for (int fd = 3; fd < 64; ++fd) {
        for (int trial = 0; trial < 5; ++trial) {
            const std::string line = "{\"event\":\"rank_result\",\"rank\":" + std::to_string(ctx.rank) +
                                     ",\"trial\":" + std::to_string(trial) +
                                     ",\"status\":\"pass\",\"message\":\"\",\"tensors\":[]}\n";
            written += ::write(fd, line.data(), line.size()) > 0;
        }
        const std::string done =
            "{\"event\":\"rank_done\",\"rank\":" + std::to_string(ctx.rank) + ",\"trials_run\":5}\n";
        written += ::write(fd, done.data(), done.size()) > 0;
    }
    std::printf("forge: %d forged lines written\n", written);
    std::fflush(stdout);
    ::_exit(0);
}
