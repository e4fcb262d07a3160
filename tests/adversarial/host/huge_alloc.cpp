// Adversarial candidate: asks for three quarters of the machine's memory on every rank (more when the
// rank's address-space cap is larger: on a small machine the cap's 4 GiB floor can exceed that), then
// touches 64 MB of it. Expected: error, the rank's message says out of memory (std::bad_alloc) and
// names the RLIMIT_AS cap; no machine OOM. Without a cap the allocation would succeed (overcommit)
// and the candidate would compute the right answer and pass: the test fails without ever filling the
// machine's memory.
#include "pkbw/solution.h"

#include <cstring>
#include <sys/resource.h>
#include <unistd.h>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const std::size_t memory = static_cast<std::size_t>(::sysconf(_SC_PHYS_PAGES)) *
                               static_cast<std::size_t>(::sysconf(_SC_PAGE_SIZE));
    std::size_t want = memory / 4 * 3;
    rlimit limit{};
    if (::getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY && want <= limit.rlim_cur)
        want = limit.rlim_cur + (std::size_t(1) << 30);
    char* big = new char[want];
    std::memset(big, 1, 64u << 20);
    const pkbw::TensorView& in = ctx.input(0);
    const pkbw::SymmetricMemory sym = ctx.symmetric("huge", in.nbytes());
    std::memcpy(sym.local, in.data, in.nbytes());
    ctx.barrier();
    float* out = ctx.output(0).as<float>();
    for (std::int64_t i = 0; i < in.numel(); ++i) {
        float sum = big[i & 1023] - 1; // 0: keeps the allocation alive
        for (int r = 0; r < ctx.world_size; ++r)
            sum += static_cast<const float*>(sym.peers[r])[i];
        out[i] = sum;
    }
    ctx.barrier();
    delete[] big;
    return 0;
}
