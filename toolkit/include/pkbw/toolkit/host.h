// Host-oracle helpers (pkbw reference toolkit): tensors as double, PyTorch's rounding to a dtype, the
// GEMMs, reductions and exchanges of the CUDA toolkit in float64 on host memory.
//
// Oracles compute in double and round where PyTorch stores a tensor of the dtype (round_to), so that
// the one rounding the comparison sees is the final one (docs/problems.md). They call core's element
// conversions (pkbw/core/dtype.h), which pkbw-rank and pkbw-candidate export to the libraries they load.
#pragma once

#include "pkbw/core/dtype.h"
#include "pkbw/solution.h"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace pkbw::tk {

// `count` elements of dtype at data, as double (exact for every floating dtype).
inline std::vector<double> to_f64(const void* data, DType dtype, std::int64_t count) {
    std::vector<double> v(static_cast<std::size_t>(count));
    const auto* p = static_cast<const std::byte*>(data);
    const std::size_t size = element_size(dtype);
    for (std::int64_t i = 0; i < count; ++i)
        v[static_cast<std::size_t>(i)] = element_to_f64(dtype, p + i * size);
    return v;
}
inline std::vector<double> to_f64(const TensorView& t) {
    return to_f64(t.data, t.dtype, t.numel());
}

// Rounds to `dtype` as storing into a tensor of that dtype would (round to nearest even).
inline double round_to(DType dtype, double value) {
    std::byte buf[8];
    f64_to_element(dtype, value, buf);
    return element_to_f64(dtype, buf);
}
inline void round_all(DType dtype, std::vector<double>& values) {
    for (double& v : values)
        v = round_to(dtype, v);
}

// Writes element i of an output (rounded to its dtype).
inline void store(const TensorView& out, std::int64_t i, double value) {
    f64_to_element(out.dtype, value, static_cast<std::byte*>(out.data) + i * element_size(out.dtype));
}
// Writes values[0..numel) into out.
inline void store_all(const TensorView& out, const std::vector<double>& values) {
    for (std::int64_t i = 0; i < out.numel(); ++i)
        store(out, i, values[static_cast<std::size_t>(i)]);
}

// Row-major C[m, n] = op(A)[m, k] · op(B)[k, n] in double. A is stored [m, k] ([k, m] when trans_a),
// B [k, n] ([n, k] when trans_b). bias (n values, or empty) is added to every row before the caller
// rounds, as the fp32 accumulator of cuBLAS's epilogue.
inline std::vector<double> gemm_f64(const std::vector<double>& a, const std::vector<double>& b,
                                    std::int64_t m, std::int64_t n, std::int64_t k, bool trans_a = false,
                                    bool trans_b = false, const std::vector<double>& bias = {}) {
    std::vector<double> c(static_cast<std::size_t>(m * n), 0.0);
    // B as [k, n] rows for the inner loop (one transpose when it is stored [n, k]).
    std::vector<double> bt;
    const double* brows = b.data();
    if (trans_b) {
        bt.resize(static_cast<std::size_t>(k * n));
        for (std::int64_t j = 0; j < n; ++j)
            for (std::int64_t p = 0; p < k; ++p)
                bt[p * n + j] = b[j * k + p];
        brows = bt.data();
    }
    for (std::int64_t i = 0; i < m; ++i) {
        double* row = &c[i * n];
        for (std::int64_t p = 0; p < k; ++p) {
            const double x = trans_a ? a[p * m + i] : a[i * k + p];
            const double* brow = brows + p * n;
            for (std::int64_t col = 0; col < n; ++col)
                row[col] += x * brow[col];
        }
        if (!bias.empty())
            for (std::int64_t col = 0; col < n; ++col)
                row[col] += bias[col];
    }
    return c;
}

// gemm_f64 with every element rounded to dtype: the GEMM's output tensor.
inline std::vector<double> gemm_rounded(const std::vector<double>& a, const std::vector<double>& b,
                                        std::int64_t m, std::int64_t n, std::int64_t k, DType dtype,
                                        bool trans_a = false, bool trans_b = false,
                                        const std::vector<double>& bias = {}) {
    std::vector<double> c = gemm_f64(a, b, m, n, k, trans_a, trans_b, bias);
    round_all(dtype, c);
    return c;
}

// --- reductions in double (the CUDA toolkit's reduce.cuh) ---

// Per row of x [rows, n]: Σ x, Σ x², max, max |x|, and max + log Σ exp(x − max).
inline std::vector<double> row_sums_f64(const std::vector<double>& x, std::int64_t rows, std::int64_t n) {
    std::vector<double> out(static_cast<std::size_t>(rows), 0.0);
    for (std::int64_t r = 0; r < rows; ++r)
        for (std::int64_t j = 0; j < n; ++j)
            out[r] += x[r * n + j];
    return out;
}
inline std::vector<double> row_sum_squares_f64(const std::vector<double>& x, std::int64_t rows,
                                               std::int64_t n) {
    std::vector<double> out(static_cast<std::size_t>(rows), 0.0);
    for (std::int64_t r = 0; r < rows; ++r)
        for (std::int64_t j = 0; j < n; ++j)
            out[r] += x[r * n + j] * x[r * n + j];
    return out;
}
inline std::vector<double> row_max_f64(const std::vector<double>& x, std::int64_t rows, std::int64_t n) {
    std::vector<double> out(static_cast<std::size_t>(rows), -INFINITY);
    for (std::int64_t r = 0; r < rows; ++r)
        for (std::int64_t j = 0; j < n; ++j) {
            const double v = x[r * n + j];
            if (v > out[r] || std::isnan(v))
                out[r] = v;
        }
    return out;
}
inline std::vector<double> row_absmax_f64(const std::vector<double>& x, std::int64_t rows, std::int64_t n) {
    std::vector<double> out(static_cast<std::size_t>(rows), 0.0);
    for (std::int64_t r = 0; r < rows; ++r)
        for (std::int64_t j = 0; j < n; ++j)
            out[r] = std::fmax(out[r], std::fabs(x[r * n + j]));
    return out;
}
inline std::vector<double> row_logsumexp_f64(const std::vector<double>& x, std::int64_t rows,
                                             std::int64_t n) {
    const std::vector<double> m = row_max_f64(x, rows, n);
    std::vector<double> out(static_cast<std::size_t>(rows));
    for (std::int64_t r = 0; r < rows; ++r) {
        const double shift = std::isinf(m[r]) ? 0.0 : m[r];
        double s = 0.0;
        for (std::int64_t j = 0; j < n; ++j)
            s += std::exp(x[r * n + j] - shift);
        out[r] = shift + std::log(s);
    }
    return out;
}
// Per column of x [rows, cols]: Σ over rows.
inline std::vector<double> column_sums_f64(const std::vector<double>& x, std::int64_t rows,
                                           std::int64_t cols) {
    std::vector<double> out(static_cast<std::size_t>(cols), 0.0);
    for (std::int64_t r = 0; r < rows; ++r)
        for (std::int64_t c = 0; c < cols; ++c)
            out[c] += x[r * cols + c];
    return out;
}
// Per block of `block` consecutive elements: max |x|.
inline std::vector<double> block_absmax_f64(const std::vector<double>& x, std::int64_t block) {
    return row_absmax_f64(x, static_cast<std::int64_t>(x.size()) / block, block);
}
// Σ x² over every element of x.
inline double sum_of_squares_f64(const std::vector<double>& x) {
    double s = 0.0;
    for (double v : x)
        s += v * v;
    return s;
}

// --- exchanges over ctx.all_gather_host (the CUDA toolkit's collectives on host memory) ---

// Every rank's `values` (the same length on every rank), in rank order.
inline std::vector<double> all_gather_f64(const Context& ctx, const std::vector<double>& values) {
    std::vector<double> all(values.size() * static_cast<std::size_t>(ctx.world_size));
    ctx.all_gather_host(values.data(), values.size() * sizeof(double), all.data());
    return all;
}
// Element-wise Σ over ranks of `values` in double (all_reduce SUM without intermediate rounding).
inline std::vector<double> all_reduce_sum_f64(const Context& ctx, const std::vector<double>& values) {
    const std::vector<double> all = all_gather_f64(ctx, values);
    std::vector<double> sum(values.size(), 0.0);
    for (int r = 0; r < ctx.world_size; ++r)
        for (std::size_t i = 0; i < values.size(); ++i)
            sum[i] += all[r * values.size() + i];
    return sum;
}

// All-to-all of bytes with per-peer counts (the CUDA toolkit's all_to_all_v): chunk p of send
// (send_counts[p] items of item_bytes, packed in peer order) goes to rank p; returns the chunks this
// rank receives, packed in source-rank order. send_counts has world_size entries; every rank calls it.
inline std::vector<std::byte> all_to_all_v_host(const Context& ctx, const void* send,
                                                const std::vector<long long>& send_counts,
                                                std::size_t item_bytes) {
    const int world = ctx.world_size;
    // Everyone's counts first, then everyone's whole send buffer padded to the largest.
    std::vector<long long> counts(static_cast<std::size_t>(world) * world);
    ctx.all_gather_host(send_counts.data(), sizeof(long long) * world, counts.data());
    long long largest = 0;
    for (int r = 0; r < world; ++r) {
        long long total = 0;
        for (int p = 0; p < world; ++p)
            total += counts[r * world + p];
        largest = total > largest ? total : largest;
    }
    const std::size_t stride = static_cast<std::size_t>(largest) * item_bytes;
    std::vector<std::byte> mine(stride), all(stride * world);
    long long own = 0;
    for (int p = 0; p < world; ++p)
        own += send_counts[p];
    if (own > 0)
        std::memcpy(mine.data(), send, static_cast<std::size_t>(own) * item_bytes);
    ctx.all_gather_host(mine.data(), stride, all.data());
    std::vector<std::byte> recv;
    for (int r = 0; r < world; ++r) {
        long long offset = 0;
        for (int p = 0; p < ctx.rank; ++p)
            offset += counts[r * world + p];
        const std::byte* chunk = all.data() + r * stride + offset * item_bytes;
        recv.insert(recv.end(), chunk, chunk + counts[r * world + ctx.rank] * item_bytes);
    }
    return recv;
}

} // namespace pkbw::tk
