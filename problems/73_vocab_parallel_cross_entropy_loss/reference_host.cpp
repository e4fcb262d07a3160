// Host oracle for PKB problem 73. Every op PKB performs in the dtype is rounded to it here: the
// shifted logits (written back in place, as PKB's sub_), each exp, each rank's sum of exps (torch
// accumulates in fp32 and rounds once; here in double), the all-reduced sum (one rounding per
// addition, in rank order), the log and the final difference.
#include "pkbw/core/dtype.h"
#include "pkbw/solution.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace {

double round_to(pkbw::DType dtype, double value) {
    std::byte buf[8];
    pkbw::f64_to_element(dtype, value, buf);
    return pkbw::element_to_f64(dtype, buf);
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& logits = ctx.input(0);
    const pkbw::TensorView& target = ctx.input(1);
    const pkbw::TensorView& out = ctx.output(0);
    const pkbw::DType d = logits.dtype;
    const std::size_t size = pkbw::element_size(d);
    auto* data = static_cast<std::byte*>(logits.data);
    const std::int64_t local = logits.shape[logits.ndim - 1];
    const std::int64_t rows = logits.numel() / local;
    const std::int64_t start = ctx.rank * local;
    const int world = ctx.world_size;
    auto at = [&](std::int64_t i) { return pkbw::element_to_f64(d, data + i * size); };

    std::vector<double> row_max(rows);
    for (std::int64_t i = 0; i < rows; ++i) {
        double m = at(i * local);
        for (std::int64_t j = 1; j < local; ++j) {
            m = std::max(m, at(i * local + j));
        }
        row_max[i] = m;
    }
    std::vector<double> all(static_cast<std::size_t>(rows) * world);
    ctx.all_gather_host(row_max.data(), rows * sizeof(double), all.data());
    for (std::int64_t i = 0; i < rows; ++i) {
        for (int r = 0; r < world; ++r) {
            row_max[i] = std::max(row_max[i], all[r * rows + i]);
        }
    }
    // [predicted (this rank's share), sum of exp] per row.
    std::vector<double> parts(static_cast<std::size_t>(2 * rows), 0.0);
    const auto* tgt = static_cast<const std::int64_t*>(target.data);
    for (std::int64_t i = 0; i < rows; ++i) {
        double sum = 0;
        for (std::int64_t j = 0; j < local; ++j) {
            const double shifted = round_to(d, at(i * local + j) - row_max[i]);
            pkbw::f64_to_element(d, shifted, data + (i * local + j) * size);
            sum += round_to(d, std::exp(shifted));
        }
        const std::int64_t t = tgt[i] - start;
        parts[i] = (t >= 0 && t < local) ? at(i * local + t) : 0.0;
        parts[rows + i] = round_to(d, sum);
    }
    std::vector<double> gathered(parts.size() * world);
    ctx.all_gather_host(parts.data(), parts.size() * sizeof(double), gathered.data());
    for (std::int64_t i = 0; i < rows; ++i) {
        double predicted = gathered[i], sum = gathered[rows + i];
        for (int r = 1; r < world; ++r) {
            predicted = round_to(d, predicted + gathered[r * 2 * rows + i]);
            sum = round_to(d, sum + gathered[r * 2 * rows + rows + i]);
        }
        const double loss = round_to(d, std::log(sum)) - predicted;
        pkbw::f64_to_element(out.dtype, loss, static_cast<std::byte*>(out.data) + i * size);
    }
    return 0;
}
