// Adversarial candidate: caches its result keyed by the input's address and its first element (a
// "cheap content check" that every trial of an eval defeats, since each trial's inputs differ from the
// first element on), so the timed calls, which see the same inputs again, copy the cached result.
// Expected for perf: pass, the cache missing on fresh inputs; but exact-mode draws are small integers,
// so two calls at one address sometimes share the first element: then the cached answer is wrong and
// the check of that call says so (invalid_timing, "computed but not allclose").
#include "pkbw/solution.h"

#include <cstring>
#include <map>
#include <utility>
#include <vector>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    static std::map<std::pair<const void*, float>, std::vector<float>> cache;
    const pkbw::TensorView& in = ctx.input(0);
    float* out = ctx.output(0).as<float>();
    const auto key = std::make_pair(static_cast<const void*>(in.data), in.as<float>()[0]);
    // Every rank must take the same branch (the barriers below): agree on whether all ranks hit.
    char hit = cache.count(key) ? 1 : 0;
    char hits[64] = {};
    ctx.all_gather_host(&hit, 1, hits);
    bool all_hit = true;
    for (int r = 0; r < ctx.world_size; ++r)
        all_hit = all_hit && hits[r];
    if (all_hit) {
        std::memcpy(out, cache[key].data(), ctx.output(0).nbytes());
        return 0;
    }
    const pkbw::SymmetricMemory sym = ctx.symmetric("cache", in.nbytes());
    std::memcpy(sym.local, in.data, in.nbytes());
    ctx.barrier();
    for (std::int64_t i = 0; i < in.numel(); ++i) {
        float sum = 0.f;
        for (int r = 0; r < ctx.world_size; ++r)
            sum += static_cast<const float*>(sym.peers[r])[i];
        out[i] = sum;
    }
    ctx.barrier();
    cache[key].assign(out, out + in.numel());
    return 0;
}
