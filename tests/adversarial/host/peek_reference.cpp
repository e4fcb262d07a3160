// Adversarial candidate (2_allgather): does not gather, but searches its own process for the answer.
// The reference runs in the same rank process; if it ran first in a trial, its outputs (downloaded
// into host memory for the comparison) would be somewhere in the heap. Each rank shares a fingerprint
// of its input (first 64 bytes and a hash: cheap, not the data), scans every writable mapping for a
// buffer whose slot r matches rank r's fingerprint for every r, and copies it. The engine runs the
// candidate before the reference, so nothing of this trial's result exists yet. Expected: mismatch
// (the output stays unwritten: NaN), never pass.
#include "pkbw/solution.h"

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

struct Fingerprint {
    unsigned char prefix[64];
    std::uint64_t hash;
};

std::uint64_t fnv1a(const unsigned char* data, std::size_t bytes) {
    std::uint64_t h = 1469598103934665603ull;
    for (std::size_t i = 0; i < bytes; ++i)
        h = (h ^ data[i]) * 1099511628211ull;
    return h;
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& in = ctx.input(0);
    const std::size_t bytes = in.nbytes();
    const std::size_t total = bytes * static_cast<std::size_t>(ctx.world_size);
    if (bytes < 64)
        return ctx.fail("peek: input too small to fingerprint");
    Fingerprint mine{};
    std::memcpy(mine.prefix, in.data, 64);
    mine.hash = fnv1a(static_cast<const unsigned char*>(in.data), bytes);
    std::vector<Fingerprint> all(static_cast<std::size_t>(ctx.world_size));
    ctx.all_gather_host(&mine, sizeof mine, all.data());

    std::ifstream maps("/proc/self/maps");
    std::string line;
    const unsigned char* found = nullptr;
    while (!found && std::getline(maps, line)) {
        std::istringstream fields(line);
        std::string range, perms;
        fields >> range >> perms;
        if (perms.size() < 2 || perms[0] != 'r' || perms[1] != 'w' || line.find("[v") != std::string::npos)
            continue;
        const std::uintptr_t begin = std::stoull(range.substr(0, range.find('-')), nullptr, 16);
        const std::uintptr_t end = std::stoull(range.substr(range.find('-') + 1), nullptr, 16);
        std::uint64_t first;
        std::memcpy(&first, all[0].prefix, sizeof first);
        for (std::uintptr_t p = begin; p + total <= end && !found; p += 16) {
            if (*reinterpret_cast<const std::uint64_t*>(p) != first)
                continue;
            const auto* candidate = reinterpret_cast<const unsigned char*>(p);
            if (candidate == in.data || candidate == ctx.output(0).data)
                continue;
            bool match = true;
            for (int r = 0; r < ctx.world_size && match; ++r) {
                const unsigned char* slot = candidate + static_cast<std::size_t>(r) * bytes;
                match = std::memcmp(slot, all[r].prefix, 64) == 0 && fnv1a(slot, bytes) == all[r].hash;
            }
            if (match)
                found = candidate;
        }
    }
    if (found) {
        std::fprintf(stderr, "peek: rank %d copied an all-gather result found at %p\n", ctx.rank,
                     static_cast<const void*>(found));
        std::memcpy(ctx.output(0).data, found, total);
    } else {
        std::fprintf(stderr, "peek: rank %d found no all-gather result in its process\n", ctx.rank);
    }
    return 0;
}
