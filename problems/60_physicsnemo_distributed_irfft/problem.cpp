// PKB problem 60: PhysicsNeMo's distributed 2-D inverse real FFT. Every rank holds H/W rows of the rfft2
// spectrum [B, C, H, Wd/2 + 1] (complex64) of one real field; the spectrum is extended to the full width
// by Hermitian symmetry (conj flip along the width, the rows flipped along H after an all-gather), each
// rank transforms its rows over the width (inverse, ortho), an all-to-all moves from H shards to width
// shards, and the columns are transformed over H (inverse, ortho): the real part, float32
// [B, C, H, Wd/W], is this rank's width shard of the field. Input and output dtypes are PKB's whatever
// --dtype says.
#include "pkbw/core/error.h"
#include "pkbw/toolkit/dft_plan_host.h"
#include "problem_util.h"

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstring>
#include <string>

namespace pkbw::problems {
namespace {

constexpr std::int64_t kBatch = 2, kChannels = 10;

// PKB: B = 2, C = 10, H = 720, Wd = 1440 at every M and N. pkbw scales H and Wd (**reduced shape**):
// H = 16 q(M) and Wd = 32 q(N) with q(x) = max(1, floor(45 x / 1024)), so M = N = 1024 is PKB's
// 720 x 1440 and the test shapes keep the float64 oracle and the input's float64 rfft2 to seconds
// (64 x 128: 32 x 160; 160 x 160: 112 x 224). Multiples of 16 keep W = 2, 4, 8 and 16 valid at every
// shape; H and Wd are not powers of two unless q is.
struct Shape60 {
    std::int64_t height = 0, width = 0;
    std::int64_t fields() const { return kBatch * kChannels; }
    std::int64_t bins() const { return width / 2 + 1; }
};
std::int64_t blocks_of(std::int64_t extent) {
    return std::max<std::int64_t>(1, 45 * extent / 1024);
}
Shape60 shape_of(const ProblemConfig& c) {
    return {16 * blocks_of(c.m), 32 * blocks_of(c.n)};
}

// The rfft along the width (unscaled) of every row of the field [rows, Wd]: [rows, Wd/2 + 1]. Two real
// rows share one complex transform (z = a + ib, A_k = (Z_k + conj Z_{n-k}) / 2,
// B_k = (Z_k - conj Z_{n-k}) / 2i); H is even, so the rows pair up within a field.
std::vector<std::complex<double>> width_spectra(const std::vector<double>& field, const Shape60& s) {
    const std::int64_t n = s.width, bins = s.bins(), rows = s.fields() * s.height;
    std::vector<std::complex<double>> half(static_cast<std::size_t>(rows * bins));
    std::vector<std::complex<double>> line(static_cast<std::size_t>(n));
    tk::DftPlanF64 plan(static_cast<std::size_t>(n));
    for (std::int64_t row = 0; row < rows; row += 2) {
        for (std::int64_t w = 0; w < n; ++w) {
            line[w] = {field[row * n + w], field[(row + 1) * n + w]};
        }
        plan.transform(line.data(), false);
        for (std::int64_t k = 0; k < bins; ++k) {
            const std::complex<double> z = line[k], mirror = std::conj(line[(n - k) % n]);
            half[row * bins + k] = 0.5 * (z + mirror);
            half[(row + 1) * bins + k] = std::complex<double>(0, -0.5) * (z - mirror);
        }
    }
    return half;
}

// The rfft2 (norm "ortho") of the field [fields, H, Wd] in double, only rows [first, first + count) of
// every field kept: [fields, count, Wd/2 + 1]. The columns are transformed along H in blocks of 16, read
// and written a block of contiguous values per row (one column at a time would touch a cache line per
// value: most of the time at PKB's 720 x 721 columns).
std::vector<std::complex<double>> rfft2_rows(const std::vector<double>& field, const Shape60& s,
                                             std::int64_t first, std::int64_t count) {
    constexpr std::int64_t kBlock = 16;
    const std::int64_t height = s.height, bins = s.bins();
    const std::vector<std::complex<double>> half = width_spectra(field, s);
    const double scale = 1.0 / std::sqrt(static_cast<double>(height * s.width));
    std::vector<std::complex<double>> kept(static_cast<std::size_t>(s.fields() * count * bins));
    std::vector<std::complex<double>> lines(static_cast<std::size_t>(kBlock * height));
    tk::DftPlanF64 plan(static_cast<std::size_t>(height));
    for (std::int64_t f = 0; f < s.fields(); ++f) {
        for (std::int64_t c0 = 0; c0 < bins; c0 += kBlock) {
            const std::int64_t block = std::min(kBlock, bins - c0);
            for (std::int64_t h = 0; h < height; ++h)
                for (std::int64_t j = 0; j < block; ++j)
                    lines[j * height + h] = half[(f * height + h) * bins + c0 + j];
            for (std::int64_t j = 0; j < block; ++j)
                plan.transform(&lines[j * height], false);
            for (std::int64_t h = 0; h < count; ++h)
                for (std::int64_t j = 0; j < block; ++j)
                    kept[(f * count + h) * bins + c0 + j] = lines[j * height + first + h] * scale;
        }
    }
    return kept;
}

class PhysicsNemoDistributedIrfft final : public BasicProblem {
public:
    PhysicsNemoDistributedIrfft()
        : BasicProblem(ProblemInfo{
              60, "60_physicsnemo_distributed_irfft", "DOM",
              "Distributed 2-D inverse real FFT: Hermitian extension, ifft over the width, all-to-all, "
              "ifft over H",
              "x [B, C, H/W, Wd/2 + 1] complex64 is this rank's H rows of rfft2(field, "
              "norm=\"ortho\") of one standard-normal float32 field [B, C, H, Wd] (the same on every "
              "rank); B = 2, C = 10, H = 16 q(M), Wd = 32 q(N), q(x) = max(1, floor(45 x / 1024)) "
              "(PKB: 720 x 1440 at M = N = 1024). The spectrum is extended to the width Wd by Hermitian "
              "symmetry (an all-gather along H supplies the flipped rows), ifft over the width (ortho), "
              "an all-to-all of width chunks concatenated along H, ifft over H (ortho), the real part: "
              "output float32 [B, C, H, Wd/W]. W must divide H and Wd."}) {}

    std::optional<std::string> check_config(const ProblemConfig& c) const override {
        if (auto why = check_common(c, info()))
            return why;
        const Shape60 s = shape_of(c);
        if (auto why =
                require_divides(info(), c.world_size, "W", s.height, "H = 16 max(1, floor(45 M / 1024))"))
            return why;
        return require_divides(info(), c.world_size, "W", s.width, "Wd = 32 max(1, floor(45 N / 1024))");
    }
    std::vector<TensorSpec> input_specs(const ProblemConfig& c, int) const override {
        const Shape60 s = shape_of(c);
        return {{"x", DType::C64, {kBatch, kChannels, s.height / c.world_size, s.bins()}}};
    }
    std::vector<TensorSpec> output_specs(const ProblemConfig& c, int) const override {
        const Shape60 s = shape_of(c);
        return {{"output", DType::F32, {kBatch, kChannels, s.height, s.width / c.world_size}}};
    }
    // PKB's arguments s = (H, Wd) and dim = (-2, -1); norm is "ortho" (a string: not a param, fixed).
    std::map<std::string, double> params(const ProblemConfig& c) const override {
        const Shape60 s = shape_of(c);
        std::map<std::string, double> params;
        add_list_param(params, "s", {static_cast<double>(s.height), static_cast<double>(s.width)});
        add_list_param(params, "dim", {-2, -1});
        return params;
    }
    // One field drawn from rank 0's seed (PKB's _seed(60, 0, trial)), element (f, h, w) at counter
    // f·H·Wd + h·Wd + w; its rfft2 in double, this rank's rows rounded to complex64.
    void make_inputs(const ProblemConfig& c, int rank, std::vector<Tensor>& inputs) const override {
        const Shape60 s = shape_of(c);
        const CounterRng rng = input_rng(c, info().id, 0, 0);
        std::vector<double> field(static_cast<std::size_t>(s.fields() * s.height * s.width));
        for (std::size_t i = 0; i < field.size(); ++i) {
            field[i] = c.input_mode == InputMode::Exact ? 0.25 * static_cast<double>(rng.integer(i, -8, 9))
                                                        : rng.normal(i);
        }
        const std::int64_t rows = s.height / c.world_size;
        const std::vector<std::complex<double>> spectrum = rfft2_rows(field, s, rank * rows, rows);
        std::vector<float> parts(2 * spectrum.size());
        for (std::size_t i = 0; i < spectrum.size(); ++i) {
            parts[2 * i] = static_cast<float>(spectrum[i].real());
            parts[2 * i + 1] = static_cast<float>(spectrum[i].imag());
        }
        if (inputs.at(0).nbytes() != parts.size() * sizeof(float))
            throw Error(info().stem + ": input x " + inputs[0].describe() + " does not hold " +
                        std::to_string(spectrum.size()) + " complex64 values");
        std::memcpy(inputs[0].mutable_data(), parts.data(), inputs[0].nbytes());
    }
    WorkModel work(const ProblemConfig& c) const override {
        const Shape60 s = shape_of(c);
        const double local = static_cast<double>(s.fields() * s.height * s.width) / c.world_size;
        const double h = static_cast<double>(s.height), wd = static_cast<double>(s.width);
        // The all-to-all of the complex64 rows after the width transform (PKB's all-gather of the
        // padded spectrum moves as many bytes again, W times over).
        return {.collective = CollectiveKind::AllToAll,
                .collective_bytes = local * 8,
                .flops = 5 * local * (std::log2(h) + std::log2(wd)), // two complex FFTs, 5 n log2 n each
                .memory_bytes =
                    static_cast<double>(s.fields() * (s.height / c.world_size) * s.bins()) * 8 + local * 4};
    }
};

} // namespace

const Problem& problem_60() {
    static const PhysicsNemoDistributedIrfft problem;
    return problem;
}

} // namespace pkbw::problems
