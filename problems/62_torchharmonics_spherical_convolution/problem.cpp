// PKB problem 62: torch-harmonics' distributed DISCO spherical convolution on a polar x azimuth grid.
// An azimuth all-to-all trades channel shards for the whole longitude, a sparse psi contracts every
// output longitude (the input rolled by one step per longitude), the partial sums are all-reduced over
// the polar group and split by latitude, a second azimuth all-to-all trades longitude back for channels,
// and a channel mix (einsum with weight) plus bias gives [B, C_out, H/polar, Wd/azimuth].
// float32 whatever --dtype says, as PKB's.
#include "problem_util.h"

#include <algorithm>
#include <tuple>

namespace pkbw::problems {
namespace {

constexpr std::int64_t kChannels = 8, kOutChannels = 8, kKernel = 3, kEntriesPerRow = 4;
constexpr float kPsiScale = 0.05f; // PKB: randn(nnz) * 0.05

std::int64_t round_up(std::int64_t value, std::int64_t multiple) {
    return (value + multiple - 1) / multiple * multiple;
}

// PKB's grid (azimuth = 2 when W is even, polar = W / azimuth; rank = polar_rank * azimuth +
// azimuth_rank) and its sizes, with batch and latitudes from M and N so that M = N = 1024 is PKB's
// shape (batch 32, nlat 128, nlon 256): batch = max(1, M/32), nlat = max(8, N/8) rounded up to a
// multiple of polar, nlon = 2 nlat rounded up to a multiple of azimuth (at least 16, so that psi's four
// entries per row fall on distinct longitudes and psi has no duplicate to coalesce).
struct Grid62 {
    int azimuth = 1, polar = 1;
    std::int64_t batch = 0, nlat = 0, nlon = 0;

    explicit Grid62(const ProblemConfig& c) {
        azimuth = c.world_size % 2 == 0 ? 2 : 1;
        polar = c.world_size / azimuth;
        batch = std::max<std::int64_t>(1, c.m / 32);
        nlat = round_up(std::max<std::int64_t>(8, c.n / 8), polar);
        nlon = round_up(2 * nlat, azimuth);
    }
    std::int64_t nlat_local() const { return nlat / polar; }
    std::int64_t nlon_local() const { return nlon / azimuth; }
    std::int64_t psi_columns() const { return nlat_local() * nlon; }
    std::int64_t nnz() const { return kKernel * nlat * kEntriesPerRow; }
};

// PKB's psi of one rank: for kernel index k and output latitude t, entries e = 0..3 at column
// local_lat * nlon + (t + e (k + 1)) mod nlon, local_lat = t mod nlat_local (PKB's (t - offset) %
// nlat_local, the same on every polar rank), values randn * 0.05 drawn in that order; then coalesced
// (sorted by (k, t, column)). Returns the row-major [3, nnz] indices and the values.
void psi_entries(const ProblemConfig& c, const Grid62& g, int rank, std::vector<double>& indices,
                 std::vector<double>& values) {
    struct Entry {
        std::int64_t k, lat, col;
        double value;
    };
    const CounterRng rng = input_rng(c, 62, rank, 2);
    std::vector<Entry> entries;
    entries.reserve(static_cast<std::size_t>(g.nnz()));
    for (std::int64_t k = 0; k < kKernel; ++k)
        for (std::int64_t t = 0; t < g.nlat; ++t)
            for (std::int64_t e = 0; e < kEntriesPerRow; ++e) {
                const auto at = static_cast<std::uint64_t>(entries.size());
                const double value =
                    c.input_mode == InputMode::Exact
                        ? 0.25 * static_cast<double>(rng.integer(at, -8, 9))
                        : static_cast<double>(static_cast<float>(rng.normal(at)) * kPsiScale);
                entries.push_back({k, t, (t % g.nlat_local()) * g.nlon + (t + e * (k + 1)) % g.nlon, value});
            }
    std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
        return std::tie(a.k, a.lat, a.col) < std::tie(b.k, b.lat, b.col);
    });
    const std::size_t n = entries.size();
    indices.assign(3 * n, 0.0);
    values.assign(n, 0.0);
    for (std::size_t i = 0; i < n; ++i) {
        indices[i] = static_cast<double>(entries[i].k);
        indices[n + i] = static_cast<double>(entries[i].lat);
        indices[2 * n + i] = static_cast<double>(entries[i].col);
        values[i] = entries[i].value;
    }
}

class SphericalConvolution final : public BasicProblem {
public:
    SphericalConvolution()
        : BasicProblem(ProblemInfo{
              62, "62_torchharmonics_spherical_convolution", "DOM",
              "Distributed DISCO spherical convolution on a polar x azimuth grid",
              "W = polar * azimuth (azimuth 2 when W is even, else 1); azimuth groups are consecutive ranks, "
              "polar groups ranks azimuth apart. x [B, 8, H/polar, Wd/azimuth] f32 per rank, B = max(1, "
              "M/32), "
              "H = max(8, N/8) rounded up to a multiple of polar, Wd = 2H rounded up to a multiple of "
              "azimuth (PKB: 32, 128, 256 at M = N = 1024). psi is PKB's sparse COO tensor [3, H, "
              "H/polar * Wd] as coalesced int64 psi_indices [3, 12H] and f32 psi_values [12H] (4 entries a "
              "row). Channels <-> longitude all-to-all over azimuth; y[b, c, k, t, p] = sum of psi[k, t, "
              "(l, j)] x[b, c, l, (j + p) mod Wd]; y all-reduced over polar and split by latitude; longitude "
              "<-> channels all-to-all back; out = einsum(y, weight [8, 8, 3]) + bias [8]: f32 [B, 8, "
              "H/polar, Wd/azimuth]. Params groups (1), nlon_out = nlon_in = Wd, azimuth_size, polar_size, "
              "psi_shape."}) {}

    std::vector<TensorSpec> input_specs(const ProblemConfig& c, int) const override {
        const Grid62 g(c);
        return {{"x", DType::F32, {g.batch, kChannels, g.nlat_local(), g.nlon_local()}},
                {"psi_indices", DType::I64, {3, g.nnz()}},
                {"psi_values", DType::F32, {g.nnz()}},
                {"weight", DType::F32, {kOutChannels, kChannels, kKernel}},
                {"bias", DType::F32, {kOutChannels}}};
    }
    std::vector<TensorSpec> output_specs(const ProblemConfig& c, int) const override {
        const Grid62 g(c);
        return {{"output", DType::F32, {g.batch, kOutChannels, g.nlat_local(), g.nlon_local()}}};
    }
    std::map<std::string, double> params(const ProblemConfig& c) const override {
        const Grid62 g(c);
        std::map<std::string, double> params{{"groups", 1.0},
                                             {"nlon_out", static_cast<double>(g.nlon)},
                                             {"nlon_in", static_cast<double>(g.nlon)},
                                             {"azimuth_size", static_cast<double>(g.azimuth)},
                                             {"polar_size", static_cast<double>(g.polar)}};
        add_list_param(params, "psi_shape",
                       {static_cast<double>(kKernel), static_cast<double>(g.nlat),
                        static_cast<double>(g.psi_columns())});
        return params;
    }
    // Every rank draws its own x, psi values, weight and bias (PKB seeds each rank); psi's indices are
    // the same on every rank. Exact mode: k/4 with k in [-8, 8] everywhere, so every partial sum of the
    // contraction, the polar sum and the channel mix is a multiple of 1/64 below 2^22: exact in fp32.
    void make_inputs(const ProblemConfig& c, int rank, std::vector<Tensor>& inputs) const override {
        const Grid62 g(c);
        for (int index : {0, 3, 4}) {
            const CounterRng rng = input_rng(c, 62, rank, index);
            if (c.input_mode == InputMode::Exact) {
                fill_exact(inputs[static_cast<std::size_t>(index)], rng, 8);
            } else {
                fill_normal(inputs[static_cast<std::size_t>(index)], rng);
            }
        }
        std::vector<double> indices, values;
        psi_entries(c, g, rank, indices, values);
        fill_values(inputs[1], indices);
        fill_values(inputs[2], values);
    }
    WorkModel work(const ProblemConfig& c) const override {
        const Grid62 g(c);
        const double channels_local = static_cast<double>(kChannels / g.azimuth);
        const double y = static_cast<double>(g.batch * kKernel * g.nlat * g.nlon) * channels_local;
        const double out = static_cast<double>(g.batch * kOutChannels * g.nlat_local() * g.nlon_local());
        const double x = static_cast<double>(g.batch * kChannels * g.nlat_local() * g.nlon_local());
        // The polar all-reduce of y (fp32) is the largest exchange when there is one; else the azimuth
        // all-to-all of x.
        return {.collective = g.polar > 1 ? CollectiveKind::AllReduce : CollectiveKind::AllToAll,
                .collective_bytes = 4 * (g.polar > 1 ? y : x),
                .flops = 2 * y * kEntriesPerRow + 2 * out * kChannels * kKernel,
                .memory_bytes = 4 * (x + out + static_cast<double>(g.nnz()) * 4)};
    }
};

} // namespace

const Problem& problem_62() {
    static const SphericalConvolution problem;
    return problem;
}

} // namespace pkbw::problems
