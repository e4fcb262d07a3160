// pkbw-candidate: the candidate's own process, one per rank, started by that rank's judge (pkbw-rank)
// inside the sandbox (docs/engine.md, "Process layout"). It holds the untrusted library and nothing
// of the judge's: no control pipe, no reference, no problem descriptors; its inputs and outputs are
// the judge's memory, mapped.
#include "../runtime/candidate_host.h"
#include "../runtime/channel.h"
#include "pkbw/core/status.h"
#include "pkbw/tracer_control.h"

#include <cstdlib>
#include <cstring>
#include <iostream>

int main(int argc, char** argv) {
    int channel_fd = -1;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--channel") == 0 && i + 1 < argc) {
            channel_fd = std::atoi(argv[++i]);
        } else {
            std::cerr << "usage: pkbw-candidate --channel FD   (started by pkbw-rank)\n";
            return 2;
        }
    }
    if (channel_fd < 0) {
        std::cerr << "pkbw-candidate: --channel FD is required (it is started by pkbw-rank)\n";
        return 2;
    }
    pkbw::tracer::prepare_nvtx_injection();
    pkbw::engine::Channel channel(channel_fd);
    try {
        return pkbw::engine::serve_candidate(channel);
    } catch (const std::exception& error) {
        std::cerr << "pkbw-candidate: " << error.what() << "\n";
        return pkbw::status::kExitInternal;
    }
}
