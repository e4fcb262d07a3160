// Adversarial candidate: with --trace each rank's process replaces its own engine trace with a
// malformed one, and rank 0 adds a CUPTI-named file with an unknown field and a truncated
// profiler-named chrome trace; then it computes the right answer. Expected: pass, each bad file named
// in the warnings, the judges' traces (the reference's iterations on every rank) stored.
#include "pkbw/solution.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unistd.h>

static void write_file(const std::string& path, const char* text) {
    ::unlink(path.c_str()); // its own recorder keeps writing the file it opened
    if (std::FILE* out = std::fopen(path.c_str(), "w")) {
        std::fputs(text, out);
        std::fclose(out);
    }
}

static void leave_garbage(int rank) {
    const char* folder = std::getenv("PKBW_TRACE_DIR");
    if (folder == nullptr) {
        std::printf("trace_garbage: no PKBW_TRACE_DIR (run with --trace)\n");
        return;
    }
    const std::string dir = folder;
    write_file(dir + "/rank_" + std::to_string(rank) + ".engine.jsonl",
               "{\"format\": \"pkbw-trace\", garbage\n");
    if (rank == 0) {
        write_file(dir + "/rank_0.cupti.jsonl",
                   "{\"format\":\"pkbw-trace\",\"version\":1,\"rank\":0,\"pid\":1,\"source\":\"cupti\","
                   "\"clock\":\"CLOCK_MONOTONIC\"}\n"
                   "{\"kind\":\"kernel\",\"name\":\"k\",\"start_ns\":1,\"end_ns\":2,\"verdict\":\"pass\"}\n");
        write_file(dir + "/rank_0.candidate.torch.json", "{\"traceEvents\": [{\"ph\": \"X\", \"ts\": ");
    }
    std::printf("trace_garbage: rank %d left its garbage in %s\n", rank, folder);
    std::fflush(stdout);
}

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    static bool done = false;
    if (!done) {
        done = true;
        leave_garbage(ctx.rank);
    }
    const pkbw::TensorView& in = ctx.input(0);
    const pkbw::SymmetricMemory sym = ctx.symmetric("trace_garbage", in.nbytes());
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
