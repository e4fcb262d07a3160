// PKB problem 78: MAGI-1's tile-parallel VAE decode. The latent is cut into overlapping tiles, dealt to
// the ranks by size, each rank "decodes" its tiles (trilinear upsampling, first 3 channels, bf16), the
// decoded tiles are gathered, each rank blends its tiles with their predecessors in bf16, and the
// blended tiles are gathered and assembled into the whole video on every rank.
#include "pkbw/toolkit/tiled_decode.h"
#include "problem_util.h"

#include <string>

namespace pkbw::problems {
namespace {

constexpr std::int64_t kChannels = 16, kFrames = 6, kDecodedChannels = 3;

// PKB: z [1, 16, 6, 90, 90] bf16, tiles of 3 x 32 x 32 latents, spatial overlap 0.25, upsampling 4 x 8
// x 8: 2 x 4 x 4 tiles and a [1, 3, 24, 720, 720] video. pkbw scales the latent's height and width
// (90 N / 1024) and the tile's (32 N / 1024) with N (**reduced shape**: the default N = 1024 is PKB's,
// N = 128 gives an 11 x 11 latent in 4 x 4 tiles of 4 and an 88 x 88 video, still 32 tiles with
// blends and short last tiles).
struct Shape78 {
    std::int64_t latent = 0, tile = 0;
};
Shape78 shape_of(const ProblemConfig& c) {
    return {90 * c.n / 1024, 32 * c.n / 1024};
}
tk::TiledDecodeArgs decode_args(const ProblemConfig& c) {
    tk::TiledDecodeArgs a;
    a.min_length = 3;
    a.min_height = a.min_width = shape_of(c).tile;
    a.spatial_overlap = 0.25;
    a.temporal_overlap = 0.0;
    a.spatial_upsample = 8;
    a.temporal_upsample = 4;
    return a;
}
tk::TilePlan plan_of(const ProblemConfig& c, std::string& error) {
    const Shape78 s = shape_of(c);
    return tk::make_tile_plan(kFrames, s.latent, s.latent, decode_args(c), error);
}

class MagiTileParallelVaeDecode final : public BasicProblem {
public:
    MagiTileParallelVaeDecode()
        : BasicProblem({.id = 78,
                        .stem = "78_magi1_tile_parallel_vae_decode",
                        .category = "DOM",
                        .title = "MAGI-1 tile-parallel VAE decode: trilinear upsampling, bf16 overlap blend",
                        .description =
                            "z [1, 16, 6, L, L] bf16 per rank (standard normal; L = 90 N / 1024, PKB: 90) "
                            "whatever the dtype; tiles of 3 x T x T latents (T = 32 N / 1024) with spatial "
                            "overlap 0.25 dealt by size to the ranks; each tile decoded from its owner's z "
                            "by trilinear x(4, 8, 8) upsampling (align_corners = False, fp32, first 3 "
                            "channels, rounded to bf16), blended with its predecessors along t, h, w in "
                            "bf16, cropped and assembled. Output: the bf16 video [1, 3, 24, H, W] (PKB: "
                            "720 x 720), the same on every rank. N must be at least 64."}) {}

    std::optional<std::string> check_config(const ProblemConfig& c) const override {
        if (auto why = check_common(c, info()))
            return why;
        if (c.n < 64)
            return info().stem + ": N = " + std::to_string(c.n) +
                   " must be at least 64 (tiles of 32 N / 1024 latents need a positive stride)";
        return std::nullopt;
    }
    std::vector<TensorSpec> input_specs(const ProblemConfig& c, int) const override {
        const Shape78 s = shape_of(c);
        return {{"z", DType::BF16, {1, kChannels, kFrames, s.latent, s.latent}}};
    }
    std::vector<TensorSpec> output_specs(const ProblemConfig& c, int) const override {
        std::string error;
        const tk::TilePlan p = plan_of(c, error);
        return {{"output",
                 DType::BF16,
                 {1, kDecodedChannels, p.out_extent(0), p.out_extent(1), p.out_extent(2)}}};
    }
    std::map<std::string, double> params(const ProblemConfig& c) const override {
        const tk::TiledDecodeArgs a = decode_args(c);
        return {{"tile_latent_min_length", double(a.min_length)},
                {"tile_latent_min_height", double(a.min_height)},
                {"tile_latent_min_width", double(a.min_width)},
                {"spatial_tile_overlap_factor", a.spatial_overlap},
                {"temporal_tile_overlap_factor", a.temporal_overlap},
                {"spatial_upsample", double(a.spatial_upsample)},
                {"temporal_upsample", double(a.temporal_upsample)},
                {"sr_ratio", double(a.sr_ratio)},
                {"first_frame_as_image", a.first_frame_as_image ? 1.0 : 0.0}};
    }
    void make_inputs(const ProblemConfig& c, int rank, std::vector<Tensor>& inputs) const override {
        fill_random_inputs(c, info().id, rank, inputs);
    }
    WorkModel work(const ProblemConfig& c) const override {
        std::string error;
        const tk::TilePlan p = plan_of(c, error);
        double decoded = 0;
        for (long long tile = 0; tile < p.count(); ++tile)
            decoded += double(kDecodedChannels * p.decoded(0, p.coord(tile, 0)) *
                              p.decoded(1, p.coord(tile, 1)) * p.decoded(2, p.coord(tile, 2)));
        const double video = double(kDecodedChannels * p.out_extent(0) * p.out_extent(1) * p.out_extent(2));
        const double w = c.world_size;
        return {.collective = CollectiveKind::AllGather,
                .collective_bytes = 2 * (decoded + video), // decoded tiles, then blended tiles, bf16
                .flops = 22 * decoded / w + 6 * video / w,
                .memory_bytes = 2 * (2 * decoded / w + video)};
    }
};

} // namespace

const Problem& problem_78() {
    static const MagiTileParallelVaeDecode problem;
    return problem;
}

} // namespace pkbw::problems
