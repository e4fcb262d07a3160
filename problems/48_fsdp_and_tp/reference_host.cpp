// Host oracle for PKB problem 48: the weight blocks gathered over the FSDP group (ranks n_tp apart)
// with the group-aware host all-gather, the three GEMMs in double rounded to D where PyTorch stores a
// tensor (x1, x2, silu(x1), z, y_partial), and y summed over the TP group in double, rounded once.
#include "pkbw/solution.h"
#include "pkbw/toolkit/host.h"
#include "pkbw/toolkit/permute_host.h"

#include <cmath>
#include <vector>

namespace tk = pkbw::tk;

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const int n_tp = static_cast<int>(ctx.param("n_tp", 1));
    const int n_fsdp = static_cast<int>(ctx.param("n_fsdp", ctx.world_size));
    if (n_tp * n_fsdp != ctx.world_size) {
        return ctx.fail("48 oracle: n_tp * n_fsdp must equal the world size");
    }
    const pkbw::TensorView& x = ctx.input(0);
    const pkbw::TensorView& w1 = ctx.input(1);
    const pkbw::TensorView& w3 = ctx.input(3);
    const pkbw::DType dt = x.dtype;
    const long long b = x.shape[0], d = x.shape[1];
    const long long dr = w1.shape[0], dc = w1.shape[1];
    const pkbw::SubComm tp = ctx.sub_comm_blocks(n_tp);
    const pkbw::SubComm fsdp = ctx.sub_comm_strided(n_tp);

    // A gathered stack [n_fsdp, rows, cols] of one input's blocks, in double.
    auto gather = [&](const pkbw::TensorView& shard) {
        std::vector<std::byte> all(shard.nbytes() * static_cast<std::size_t>(fsdp.size));
        ctx.all_gather_host(fsdp, shard.data, shard.nbytes(), all.data());
        return tk::to_f64(all.data(), shard.dtype, shard.numel() * fsdp.size);
    };
    const std::vector<double> w1_full = gather(ctx.input(1)); // cat dim 0: [D, dc] as stacked
    const std::vector<double> w2_full = gather(ctx.input(2));
    const long long stack[] = {fsdp.size, dc, dr};
    const int to_cols[] = {1, 0, 2}; // [n_fsdp, dc, dr] -> [dc, n_fsdp, dr] = cat dim 1: [dc, D]
    const std::vector<double> w3_full = tk::permuted(gather(w3), 3, stack, to_cols);
    if (dr * fsdp.size != d) {
        return ctx.fail("48 oracle: W1_shard rows * n_fsdp must equal D");
    }

    const std::vector<double> xs = tk::to_f64(x);
    const std::vector<double> x1 = tk::gemm_rounded(xs, w1_full, b, dc, d, dt);
    const std::vector<double> x2 = tk::gemm_rounded(xs, w2_full, b, dc, d, dt);
    std::vector<double> z(x1.size());
    for (std::size_t i = 0; i < z.size(); ++i) {
        const double s = tk::round_to(dt, x1[i] / (1.0 + std::exp(-x1[i])));
        z[i] = tk::round_to(dt, s * x2[i]);
    }
    const std::vector<double> y_partial = tk::gemm_rounded(z, w3_full, b, d, dc, dt);
    tk::store_all(ctx.output(0), tk::all_reduce_sum_f64(ctx, tp, y_partial));
    return 0;
}
