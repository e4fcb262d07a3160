// Adversarial candidate: with --trace its process may write its trace folder (PKBW_TRACE_DIR,
// trace/candidate). Each rank replaces its own engine trace with a link to a valid trace outside the
// run (in /dev/shm, the one other place it may write) whose only event is a secret; rank 0 adds links
// named like trace files to /etc/passwd, to the run's config.json and to a directory, and a link to
// /etc under another name; then it computes the right answer. Expected: pass, every link refused and
// named in the warnings, nothing of their targets stored, the judges' traces stored.
#include "pkbw/solution.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unistd.h>

static void leave_links(int rank) {
    const char* folder = std::getenv("PKBW_TRACE_DIR");
    if (folder == nullptr) {
        std::printf("trace_symlink: no PKBW_TRACE_DIR (run with --trace)\n");
        return;
    }
    const std::string dir = folder;
    const std::string own = dir + "/rank_" + std::to_string(rank) + ".engine.jsonl";
    const std::string target = "/dev/shm/pkbw-adversarial-trace-" + std::to_string(::getpid()) + ".jsonl";
    if (std::FILE* out = std::fopen(target.c_str(), "w")) {
        std::fprintf(out,
                     "{\"format\":\"pkbw-trace\",\"version\":1,\"rank\":%d,\"pid\":1,\"source\":\"engine\","
                     "\"clock\":\"CLOCK_MONOTONIC\"}\n"
                     "{\"kind\":\"nvtx_mark\",\"name\":\"adversarial-secret-outside-the-run\",\"start_ns\":1,"
                     "\"end_ns\":1}\n{\"end\":true,\"events\":1,\"dropped_records\":0}\n",
                     rank);
        std::fclose(out);
    }
    ::unlink(own.c_str()); // its own recorder keeps writing the file it opened
    const bool linked = ::symlink(target.c_str(), own.c_str()) == 0;
    std::printf("trace_symlink: rank %d linked %s to %s: %s\n", rank, own.c_str(), target.c_str(),
                linked ? "done" : std::strerror(errno));
    if (rank == 0) {
        ::symlink("/etc/passwd", (dir + "/rank_0.cupti.jsonl").c_str());
        ::symlink("../../config.json", (dir + "/rank_5.engine.jsonl").c_str());
        ::symlink("..", (dir + "/rank_6.engine.jsonl").c_str());
        ::symlink("/etc", (dir + "/nested").c_str());
    }
    std::fflush(stdout);
}

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    static bool done = false;
    if (!done) {
        done = true;
        leave_links(ctx.rank);
    }
    const pkbw::TensorView& in = ctx.input(0);
    const pkbw::SymmetricMemory sym = ctx.symmetric("trace_symlink", in.nbytes());
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
