// Host oracle for PKB problem 8: the toolkit's host all-to-all of equal chunks (chunk k of rank r
// lands as chunk r of rank k).
#include "pkbw/solution.h"
#include "pkbw/toolkit/host.h"

#include <cstring>
#include <vector>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& in = ctx.input(0);
    const std::vector<long long> chunks(static_cast<std::size_t>(ctx.world_size),
                                        static_cast<long long>(in.nbytes()) / ctx.world_size);
    const std::vector<std::byte> received = pkbw::tk::all_to_all_v_host(ctx, in.data, chunks, 1);
    std::memcpy(ctx.output(0).data, received.data(), received.size());
    return 0;
}
