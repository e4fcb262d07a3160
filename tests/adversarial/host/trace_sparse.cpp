// Adversarial candidate: with --trace each rank's process leaves a 1 GiB sparse file named like a
// CUPTI trace in its trace folder (PKBW_TRACE_DIR): no disk, but a reader that reads it whole holds
// a gibibyte or two. Then it computes the right answer. Expected: pass, the files refused by their
// size before anything is read and named in the warnings, pkbw's memory bounded, the judges' traces
// stored.
#include "pkbw/solution.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <string>
#include <unistd.h>

static void leave_sparse_file(int rank) {
    const char* folder = std::getenv("PKBW_TRACE_DIR");
    if (folder == nullptr) {
        std::printf("trace_sparse: no PKBW_TRACE_DIR (run with --trace)\n");
        return;
    }
    const std::string path = std::string(folder) + "/rank_" + std::to_string(rank) + ".cupti.jsonl";
    const int fd = ::open(path.c_str(), O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0644);
    const bool made = fd >= 0 && ::ftruncate(fd, 1ll << 30) == 0;
    std::printf("trace_sparse: rank %d: 1 GiB sparse %s: %s\n", rank, path.c_str(),
                made ? "done" : std::strerror(errno));
    if (fd >= 0)
        ::close(fd);
    std::fflush(stdout);
}

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    static bool done = false;
    if (!done) {
        done = true;
        leave_sparse_file(ctx.rank);
    }
    const pkbw::TensorView& in = ctx.input(0);
    const pkbw::SymmetricMemory sym = ctx.symmetric("trace_sparse", in.nbytes());
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
