// Adversarial candidate: computes a block's outputs before the block, outside its cgroup. On its first
// call it starts a helper with clone3(CLONE_VM | CLONE_INTO_CGROUP): a process that shares the
// candidate's address space (so it sees every buffer the judge maps later, the timed input slots
// included) but lives in the judge's cgroup, so the freeze does not stop it and its CPU time is not the
// candidate's tree's. The timed input slots are shared by both sides' workers, and a pair whose
// reference block comes first loads the very inputs the candidate's block will read next: while the
// reference is timed, the helpers of all ranks copy those inputs into symmetric memory, sum them, and
// keep the results. The candidate's block then checks (one host all-gather) that every rank holds
// results for exactly its inputs, and each call copies its output instead of reducing. Other blocks
// are computed honestly. Every output is right. What pkbw should say: invalid_timing (a process of the
// candidate ran outside its cgroup while it was frozen), or the clone should fail.
#include "pkbw/solution.h"

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <linux/sched.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef CLONE_INTO_CGROUP
#define CLONE_INTO_CGROUP 0x200000000ULL
#endif

namespace {

constexpr int kMaxK = 64;
constexpr int kPrints = 8; // floats per call in a fingerprint

// Published by the candidate once it knows a block's layout; read by the helper.
struct Layout {
    std::atomic<int> ready{0};
    const char* inputs = nullptr; // first input set of the block
    std::size_t set_in = 0;
    int calls = 0;
    std::int64_t numel = 0;
    int rank = 0, world = 0;
    float* local = nullptr;                         // this rank's exchange buffer (symmetric)
    const float* peers[pkbw::kMaxRanks] = {};       // every rank's exchange buffer
    std::uint32_t* flags[pkbw::kMaxRanks] = {}; // every rank's signal pad (a Post)
};
Layout layout;
float* stash = nullptr; // the helper's results, kMaxK sets
std::atomic<std::uint64_t> stash_print{0};
std::atomic<long> helper_blocks{0};

std::uint64_t fingerprint(const char* inputs, std::size_t set_in, int calls, std::int64_t numel) {
    std::uint64_t h = 1469598103934665603ull;
    for (int k = 0; k < calls; ++k) {
        const float* in = reinterpret_cast<const float*>(inputs + set_in * k);
        for (int p = 0; p < kPrints; ++p) {
            std::uint32_t bits;
            std::memcpy(&bits, in + (numel - 1) * p / (kPrints - 1), sizeof bits);
            h = (h ^ bits) * 1099511628211ull;
        }
    }
    return h;
}

void nap(long ns) {
    const timespec t{0, ns};
    syscall(SYS_nanosleep, &t, nullptr);
}

long long now_ns() {
    timespec t{};
    syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000ll + t.tv_nsec;
}

// What a helper posts in its signal pad: when it saw new inputs (the judges load a group on every rank
// within a millisecond or so; distinct groups come a block apart), under a sequence number.
struct Post {
    std::atomic<std::uint32_t> sequence;
    std::uint32_t pad;
    std::atomic<long long> seen_ns;
};

// The helper: no libc state of its own (it shares the candidate's memory and TLS), raw syscalls only.
int helper(void*) {
    syscall(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    std::uint64_t last = 0;
    std::uint32_t sequence = 0;
    while (true) {
        if (!layout.ready.load(std::memory_order_acquire)) {
            nap(1000000);
            continue;
        }
        const Layout& l = layout;
        std::uint64_t print = fingerprint(l.inputs, l.set_in, l.calls, l.numel);
        if (print == last) {
            nap(50000);
            continue;
        }
        // The judge may still be writing the group: wait until it holds still for a millisecond.
        for (std::uint64_t settled = 0; settled != print;) {
            settled = print;
            nap(1000000);
            print = fingerprint(l.inputs, l.set_in, l.calls, l.numel);
        }
        last = print;
        const long long seen = now_ns();
        ++sequence;
        float* mine = l.local + l.numel * l.calls * (sequence % 2); // double-buffered
        const std::size_t bytes = static_cast<std::size_t>(l.numel) * sizeof(float);
        for (int k = 0; k < l.calls; ++k) {
            std::memcpy(mine + l.numel * k, l.inputs + l.set_in * k, bytes);
        }
        Post* me = reinterpret_cast<Post*>(l.flags[l.rank]);
        me->seen_ns.store(seen, std::memory_order_relaxed);
        me->sequence.store(sequence, std::memory_order_release);
        // Every peer's inputs of the same load: posted within 5 ms of ours.
        const float* theirs[pkbw::kMaxRanks] = {};
        std::uint32_t used[pkbw::kMaxRanks] = {};
        bool all = true;
        for (int r = 0; r < l.world && all; ++r) {
            const Post* post = reinterpret_cast<const Post*>(l.flags[r]);
            bool found = false;
            while (!found && now_ns() - seen < 8000000) {
                const std::uint32_t s = post->sequence.load(std::memory_order_acquire);
                const long long t = post->seen_ns.load(std::memory_order_relaxed);
                found = s != 0 && t > seen - 5000000 && t < seen + 5000000;
                if (found) {
                    used[r] = s;
                    theirs[r] = l.peers[r] + l.numel * l.calls * (s % 2);
                } else {
                    nap(20000);
                }
            }
            all = found;
        }
        if (!all) {
            continue;
        }
        stash_print.store(0, std::memory_order_release);
        for (std::int64_t i = 0; i < l.numel * l.calls; ++i) {
            float sum = 0.f;
            for (int r = 0; r < l.world; ++r) {
                sum += theirs[r][i];
            }
            stash[i] = sum;
        }
        bool unchanged = true; // no peer posted newer inputs meanwhile
        for (int r = 0; r < l.world; ++r) {
            unchanged = unchanged &&
                        reinterpret_cast<const Post*>(l.flags[r])->sequence.load(std::memory_order_acquire) == used[r];
        }
        if (unchanged) {
            stash_print.store(print, std::memory_order_release);
            helper_blocks.fetch_add(1);
        }
    }
}

// clone3 with a new stack: the child calls fn(arg) on it and exits.
long clone3_call(clone_args* args, int (*fn)(void*), void* arg) {
    long ret;
    register long r12 asm("r12") = reinterpret_cast<long>(fn);
    register long r13 asm("r13") = reinterpret_cast<long>(arg);
    asm volatile("syscall\n\t"
                 "test %%rax, %%rax\n\t"
                 "jnz 1f\n\t"
                 "xor %%ebp, %%ebp\n\t"
                 "mov %%r13, %%rdi\n\t"
                 "call *%%r12\n\t"
                 "mov %%eax, %%edi\n\t"
                 "mov $60, %%eax\n\t"
                 "syscall\n\t"
                 "1:\n\t"
                 : "=a"(ret)
                 : "a"(static_cast<long>(SYS_clone3)), "D"(args), "S"(sizeof(clone_args)), "r"(r12), "r"(r13)
                 : "rcx", "r11", "rdx", "memory");
    return ret;
}

bool cgroup_of(int pid, char* path, int size) {
    char file[64];
    std::snprintf(file, sizeof file, "/proc/%d/cgroup", pid);
    FILE* f = std::fopen(file, "r");
    if (!f) {
        return false;
    }
    char line[1024];
    bool found = false;
    while (!found && std::fgets(line, sizeof line, f)) {
        if (std::strncmp(line, "0::", 3) == 0) {
            line[std::strcspn(line, "\n")] = 0;
            std::snprintf(path, size, "%s", line + 3);
            found = true;
        }
    }
    std::fclose(f);
    return found;
}

bool cgroup2_mount(char* mount, int size) {
    FILE* f = std::fopen("/proc/self/mountinfo", "r");
    if (!f) {
        return false;
    }
    char line[1024];
    bool found = false;
    while (!found && std::fgets(line, sizeof line, f)) {
        char point[512];
        if (std::strstr(line, " - cgroup2 ") && std::sscanf(line, "%*s %*s %*s %*s %511s", point) == 1) {
            std::snprintf(mount, size, "%s", point);
            found = true;
        }
    }
    std::fclose(f);
    return found;
}

void start_helper(std::size_t set_bytes) {
    stash = static_cast<float*>(mmap(nullptr, set_bytes * kMaxK, PROT_READ | PROT_WRITE,
                                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    const std::size_t stack_size = 1 << 20;
    void* stack = mmap(nullptr, stack_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    char mount[512], judge[512], dir[1100];
    if (!cgroup2_mount(mount, sizeof mount) || !cgroup_of(getppid(), judge, sizeof judge)) {
        std::fprintf(stderr, "escape_precompute: no cgroup2\n");
        return;
    }
    std::snprintf(dir, sizeof dir, "%s%s", mount, judge);
    const int target = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    clone_args args{};
    args.flags = CLONE_VM | CLONE_INTO_CGROUP;
    args.exit_signal = SIGCHLD;
    args.stack = reinterpret_cast<unsigned long long>(stack);
    args.stack_size = stack_size;
    args.cgroup = static_cast<unsigned long long>(target);
    const long pid = clone3_call(&args, helper, nullptr);
    std::fprintf(stderr, "escape_precompute: helper %ld in %s (%s)\n", pid, dir, pid > 0 ? "ok" : std::strerror(errno));
    close(target);
}

// Honest all-reduce of one call.
void reduce(const pkbw::Context& ctx, const pkbw::TensorView& in, const pkbw::TensorView& out) {
    const pkbw::SymmetricMemory sym = ctx.symmetric("pc1", in.nbytes());
    std::memcpy(sym.local, in.data, in.nbytes());
    ctx.barrier();
    float* dst = out.as<float>();
    for (std::int64_t i = 0; i < in.numel(); ++i) {
        float sum = 0.f;
        for (int r = 0; r < ctx.world_size; ++r) {
            sum += static_cast<const float*>(sym.peers[r])[i];
        }
        dst[i] = sum;
    }
    ctx.barrier();
}

const char *prev_in = nullptr, *prev_out = nullptr, *run_start = nullptr;
int run_length = 0, block_calls = 0;
const char* block_start = nullptr;
bool use_stash = false;
int stash_hits = 0;

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& in = ctx.input(0);
    const pkbw::TensorView& out = ctx.output(0);
    const std::size_t set_in = (in.nbytes() + 255) / 256 * 256, set_out = (out.nbytes() + 255) / 256 * 256;
    static bool started = false;
    if (!started) {
        started = true;
        start_helper(in.nbytes());
    }
    const char* ip = static_cast<const char*>(in.data);
    const char* op = static_cast<const char*>(out.data);
    if (prev_in != nullptr && ip == prev_in + set_in && op == prev_out + set_out) {
        ++run_length;
    } else {
        run_start = ip;
        run_length = 1;
    }
    prev_in = ip;
    prev_out = op;
    // A block's first call, once the warm-up taught the block's length (every rank learns it at once).
    if (run_length == 1 && ip == block_start && block_calls > 1) {
        layout.ready.store(1, std::memory_order_release); // the layout is complete: the helper may start
        const bool mine = stash_print.load(std::memory_order_acquire) ==
                          fingerprint(ip, set_in, block_calls, in.numel());
        char ok = mine ? 1 : 0, all[pkbw::kMaxRanks] = {};
        ctx.all_gather_host(&ok, 1, all);
        use_stash = true;
        for (int r = 0; r < ctx.world_size; ++r) {
            use_stash = use_stash && all[r];
        }
        stash_hits += use_stash;
        if (ctx.rank == 0) {
            std::fprintf(stderr, "escape_precompute: block %s from the helper's results (%d so far; the helper "
                         "reduced %ld loads)\n", use_stash ? "copied" : "computed", stash_hits, helper_blocks.load());
        }
    }
    if (use_stash && run_length <= block_calls && run_start == block_start) {
        std::memcpy(out.data, stash + in.numel() * (run_length - 1), out.nbytes());
        if (run_length == block_calls) {
            use_stash = false;
        }
        return 0;
    }
    use_stash = false;
    reduce(ctx, in, out);
    if (run_length > 1 && run_length > block_calls && run_length <= kMaxK) {
        // The warm-up block: the layout the helper will read (every rank in the same call).
        block_start = run_start;
        block_calls = run_length;
        if (run_length >= 2) {
            const pkbw::SymmetricMemory sym = ctx.symmetric("pcK", in.nbytes() * kMaxK * 2);
            layout.inputs = run_start;
            layout.set_in = set_in;
            layout.calls = run_length;
            layout.numel = in.numel();
            layout.rank = ctx.rank;
            layout.world = ctx.world_size;
            layout.local = static_cast<float*>(sym.local);
            for (int r = 0; r < ctx.world_size; ++r) {
                layout.peers[r] = static_cast<const float*>(sym.peers[r]);
                layout.flags[r] = sym.signal_pads[r];
            }
        }
    }
    return 0;
}

