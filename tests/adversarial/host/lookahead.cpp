// Adversarial candidate: batches a timed block. The K calls of a block read input sets laid out one
// after the other in one shared mapping (each 256-byte aligned) and write output slots laid out the same
// way, and every block reuses the same views. So it learns, from the warm-up block, which address starts
// a run of K consecutive sets; from then on, the call that reads the first set reads all K sets at once,
// computes all K outputs with two barriers in all (instead of two per call), and the K-1 calls that
// follow return at once: their outputs are already written. Every output is right, every slot is
// written before the block answers. A real caller never hands a collective its next K inputs in advance.
// What pkbw should say: invalid_timing (calls of a block must not see each other's inputs), or time each
// call with only its own inputs present.
#include "pkbw/solution.h"

#include <cstdint>
#include <cstring>

namespace {

constexpr int kKnown = 16;
struct Run {
    const char* start = nullptr;
    int length = 0;
};
Run known[kKnown];
const char *prev_in = nullptr, *prev_out = nullptr, *run_start = nullptr;
int run_length = 0;
int pending = 0; // calls of the current block already computed
const char *next_in = nullptr, *next_out = nullptr;

std::size_t aligned(std::size_t bytes) {
    return (bytes + 255) / 256 * 256;
}

int known_length(const char* start) {
    for (const Run& run : known) {
        if (run.start == start) {
            return run.length;
        }
    }
    return 0;
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

// Sums `count` consecutive sets (stride in/out bytes) over all ranks.
void allreduce(const pkbw::Context& ctx, const char* in, char* out, std::size_t set_in, std::size_t set_out,
               std::int64_t numel, int count) {
    const std::size_t bytes = static_cast<std::size_t>(numel) * sizeof(float);
    const pkbw::SymmetricMemory sym = ctx.symmetric(count == 1 ? "la1" : "laK", bytes * count);
    for (int k = 0; k < count; ++k) {
        std::memcpy(static_cast<char*>(sym.local) + bytes * k, in + set_in * k, bytes);
    }
    ctx.barrier();
    for (int k = 0; k < count; ++k) {
        float* dst = reinterpret_cast<float*>(out + set_out * k);
        for (std::int64_t i = 0; i < numel; ++i) {
            float sum = 0.f;
            for (int r = 0; r < ctx.world_size; ++r) {
                sum += static_cast<const float*>(sym.peers[r])[numel * k + i];
            }
            dst[i] = sum;
        }
    }
    ctx.barrier();
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& in = ctx.input(0);
    const pkbw::TensorView& out = ctx.output(0);
    const char* ip = static_cast<const char*>(in.data);
    char* op = static_cast<char*>(out.data);
    const std::size_t set_in = aligned(in.nbytes()), set_out = aligned(out.nbytes());
    // The run of consecutive sets this call continues (or starts).
    if (prev_in != nullptr && ip == prev_in + set_in && op == prev_out + set_out) {
        ++run_length;
    } else {
        run_start = ip;
        run_length = 1;
    }
    learn(run_start, run_length);
    prev_in = ip;
    prev_out = op;
    if (pending > 0 && ip == next_in && op == next_out) {
        --pending; // computed by the first call of the block
        next_in += set_in;
        next_out += set_out;
        return 0;
    }
    pending = 0;
    const int length = run_length == 1 ? known_length(ip) : 0;
    if (length > 1) {
        allreduce(ctx, ip, op, set_in, set_out, in.numel(), length);
        pending = length - 1;
        next_in = ip + set_in;
        next_out = op + set_out;
        return 0;
    }
    allreduce(ctx, ip, op, set_in, set_out, in.numel(), 1);
    return 0;
}
