// Adversarial candidate: finishes a timed block's last call after the block has answered. It learns
// from the warm-up which address starts a run of K consecutive input sets (a block's calls), so it knows
// which call is a block's last. That call copies its input and meets its peers as usual, writes one
// element (the slot is no longer untouched when the judge looks at the reply), skips its final barrier,
// and leaves the sum to a thread of its own that runs while the judge checks for untouched slots, meets
// the other judges, reads its clock and freezes the tree. If the thread is done before the freeze, the
// output is complete when the pair is checked and the block's time lacks the last call's work.
// What pkbw should say: invalid_timing (an output changed after its block answered; on a loaded machine,
// where the thread may not finish before the pair is checked, a call that failed its check), or nothing
// is gained.
#include "pkbw/solution.h"

#include <atomic>
#include <cstdint>
#include <cstring>
#include <thread>

namespace {

constexpr int kKnown = 16;
struct Run {
    const char* start = nullptr;
    int length = 0;
};
Run known[kKnown];
const char *prev_in = nullptr, *prev_out = nullptr, *run_start = nullptr;
int run_length = 0;

struct Job {
    const float* peers[pkbw::kMaxRanks];
    int world = 0;
    float* out = nullptr;
    std::int64_t numel = 0;
};
Job job;
std::atomic<int> posted{0};

std::size_t aligned(std::size_t bytes) {
    return (bytes + 255) / 256 * 256;
}

void learn(const char* start, int length) {
    for (Run& run : known) {
        if (run.start == start) {
            run.length = length > run.length ? length : run.length;
            return;
        }
    }
    for (Run& run : known) {
        if (run.start == nullptr) {
            run = {start, length};
            return;
        }
    }
}

int known_length(const char* start) {
    for (const Run& run : known) {
        if (run.start == start) {
            return run.length;
        }
    }
    return 0;
}

void sum(const Job& j, std::int64_t from) {
    for (std::int64_t i = from; i < j.numel; ++i) {
        float s = 0.f;
        for (int r = 0; r < j.world; ++r) {
            s += j.peers[r][i];
        }
        j.out[i] = s;
    }
}

void finisher() {
    int seen = 0;
    while (true) {
        posted.wait(seen);
        seen = posted.load();
        sum(job, 1);
    }
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    static bool started = false;
    if (!started) {
        started = true;
        std::thread(finisher).detach();
    }
    const pkbw::TensorView& in = ctx.input(0);
    const pkbw::TensorView& out = ctx.output(0);
    const char* ip = static_cast<const char*>(in.data);
    const char* op = static_cast<const char*>(out.data);
    if (prev_in != nullptr && ip == prev_in + aligned(in.nbytes()) && op == prev_out + aligned(out.nbytes())) {
        ++run_length;
    } else {
        run_start = ip;
        run_length = 1;
    }
    // The last call of a block seen before (the warm-up taught the length of the run).
    const bool last = known_length(run_start) > 1 && run_length == known_length(run_start);
    learn(run_start, run_length);
    prev_in = ip;
    prev_out = op;

    const pkbw::SymmetricMemory sym = ctx.symmetric("far", in.nbytes());
    std::memcpy(sym.local, in.data, in.nbytes());
    ctx.barrier();
    Job j;
    j.world = ctx.world_size;
    for (int r = 0; r < ctx.world_size; ++r) {
        j.peers[r] = static_cast<const float*>(sym.peers[r]);
    }
    j.out = out.as<float>();
    j.numel = in.numel();
    if (last) {
        j.out[0] = j.peers[0][0] + (j.world > 1 ? j.peers[1][0] : 0.f);
        for (int r = 2; r < j.world; ++r) {
            j.out[0] += j.peers[r][0];
        }
        job = j;
        posted.fetch_add(1);
        posted.notify_one();
        return 0; // no final barrier: no call follows before the judge has frozen and checked
    }
    sum(j, 0);
    ctx.barrier();
    return 0;
}
