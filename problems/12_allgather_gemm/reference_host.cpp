// Host oracle for PKB problem 12: gather the A shards, multiply in double, round once.
#include "pkbw/solution.h"
#include "pkbw/toolkit/host.h"
#include "pkbw/toolkit/permute_host.h"

#include <vector>

using pkbw::tk::to_f64;

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& a_local = ctx.input(0);
    const pkbw::TensorView& b_view = ctx.input(1);
    const pkbw::TensorView& c = ctx.output(0);
    const std::int64_t m = a_local.shape[0], kl = a_local.shape[1], n = b_view.shape[1];
    const int world = ctx.world_size;
    const std::int64_t k = kl * world;
    if (b_view.shape[0] != k) {
        return ctx.fail("12_allgather_gemm host reference: B must have W * K_local rows");
    }
    std::vector<std::byte> gathered(a_local.nbytes() * static_cast<std::size_t>(world));
    ctx.all_gather_host(a_local.data, a_local.nbytes(), gathered.data());
    // [W, M, K/W] -> [M, W, K/W] = A [M, K]
    const long long shape[] = {world, m, kl};
    const int perm[] = {1, 0, 2};
    const std::vector<double> a =
        pkbw::tk::permuted(to_f64(gathered.data(), a_local.dtype, m * k), 3, shape, perm);
    pkbw::tk::store_all(c, pkbw::tk::gemm_f64(a, to_f64(b_view.data, b_view.dtype, k * n), m, n, k));
    return 0;
}
