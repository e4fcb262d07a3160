#include "suggest.h"

#include "pkbw/problems/registry.h"

#include <algorithm>
#include <cctype>

namespace pkbw::cli {

std::size_t edit_distance(std::string_view a, std::string_view b) {
    const std::size_t n = a.size(), m = b.size();
    std::vector<std::vector<std::size_t>> d(n + 1, std::vector<std::size_t>(m + 1));
    for (std::size_t i = 0; i <= n; ++i)
        d[i][0] = i;
    for (std::size_t j = 0; j <= m; ++j)
        d[0][j] = j;
    for (std::size_t i = 1; i <= n; ++i) {
        for (std::size_t j = 1; j <= m; ++j) {
            const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
            d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
                d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
        }
    }
    return d[n][m];
}

namespace {

std::string lower(std::string_view text) {
    std::string out(text);
    for (char& c : out)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

// "18_tp_rms_norm" -> "tp_rms_norm": a stem's name without its number, for typed names without one.
std::string_view without_number(std::string_view stem) {
    const auto underscore = stem.find('_');
    if (underscore == std::string_view::npos || underscore == 0)
        return stem;
    for (std::size_t i = 0; i < underscore; ++i)
        if (!std::isdigit(static_cast<unsigned char>(stem[i])))
            return stem;
    return stem.substr(underscore + 1);
}

bool all_digits(std::string_view text) {
    return !text.empty() && std::all_of(text.begin(), text.end(),
                                        [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
}

} // namespace

std::vector<std::string> closest_names(std::string_view typed, const std::vector<std::string>& names,
                                       std::size_t at_most) {
    const std::string wanted = lower(typed);
    std::vector<std::pair<std::size_t, std::string>> scored;
    for (const auto& name : names) {
        const std::string candidate = lower(name);
        std::size_t score = std::min(edit_distance(wanted, candidate),
                                     edit_distance(without_number(wanted), without_number(candidate)));
        const std::size_t limit = std::max<std::size_t>(2, std::max(wanted.size(), candidate.size()) / 3);
        const bool contains =
            wanted.size() >= 3 && (candidate.find(std::string(without_number(wanted))) != std::string::npos ||
                                   wanted.find(std::string(without_number(candidate))) != std::string::npos);
        if (score > limit && !contains)
            continue;
        scored.emplace_back(contains ? std::min<std::size_t>(score, limit) : score, name);
    }
    std::stable_sort(scored.begin(), scored.end(),
                     [](const auto& x, const auto& y) { return x.first < y.first; });
    std::vector<std::string> out;
    for (std::size_t i = 0; i < scored.size() && out.size() < at_most; ++i)
        out.push_back(scored[i].second);
    return out;
}

const std::vector<std::string>& pkb_problem_stems() {
    static const std::vector<std::string> stems = {"1_allreduce",
                                                   "2_allgather",
                                                   "3_broadcast",
                                                   "4_reduce",
                                                   "5_scatter",
                                                   "6_gather",
                                                   "7_reducescatter",
                                                   "8_alltoall",
                                                   "9_layernorm_backward",
                                                   "10_embedding_lookup",
                                                   "11_allgather_gemm_AT",
                                                   "12_allgather_gemm",
                                                   "13_gemm_allreduce",
                                                   "14_gemm_allgather",
                                                   "15_combined_sharded_gemms",
                                                   "16_gemm_reducescatter",
                                                   "17_rope_allgather",
                                                   "18_tp_rms_norm",
                                                   "19_blocked_fp8_quantize",
                                                   "20_blocked_fp8_dequantize",
                                                   "21_clip_grad_norm_no_ep",
                                                   "22_clip_grad_norm_ep",
                                                   "23_grad_acc_loss",
                                                   "24_load_balancing_loss_fn",
                                                   "25_importance_sampling_loss",
                                                   "26_moe_token_preprocess",
                                                   "27_moe_all2all_primitive",
                                                   "28_moe_pre_all2all",
                                                   "29_moe_post_all2all",
                                                   "30_moe_epgroupgemm_lora_backward",
                                                   "31_fused_moe_fwd",
                                                   "32_fused_moe_fwd_lora",
                                                   "33_ulysses_all_to_all_tensor_primitive",
                                                   "34_ulysses_all_gather_into_tensor_primitive",
                                                   "35_ulysses_all_gather_variable_primitive",
                                                   "36_ulysses_gather_seq_scatter_heads",
                                                   "37_ulysses_gather_heads_scatter_seq",
                                                   "38_ulysses_gather_seq_scatter_heads_qkv",
                                                   "39_ulysses_attention_e2e",
                                                   "40_ddp",
                                                   "41_zero1_optimizer_shard",
                                                   "42_zero2_optimizer_shard_grad",
                                                   "43_fused_adam_grad_unshard_allgather",
                                                   "44_quantized_grad_allreduce",
                                                   "45_reducescatter_fused_rmsnorm",
                                                   "46_gemv_decode",
                                                   "47_fsdp_step_e2e",
                                                   "48_fsdp_and_tp",
                                                   "49_moe_ep_balanced",
                                                   "50_moe_ep_wide",
                                                   "51_moe_ep_narrow",
                                                   "52_fp8_reduce_scatter_grads",
                                                   "53_fp8_allgather_params",
                                                   "54_ring_attention",
                                                   "55_ring_attention_tp",
                                                   "56_ring_attention_pp",
                                                   "57_ring_attention_backward_dp",
                                                   "58_openclip_contrastive_loss",
                                                   "59_physicsnemo_distributed_rfft",
                                                   "60_physicsnemo_distributed_irfft",
                                                   "61_gsplat_3d_gaussian_splatting",
                                                   "62_torchharmonics_spherical_convolution",
                                                   "63_deepmd_kalman_filter_optimizer",
                                                   "64_gnn_neighbor_sampling",
                                                   "65_gnn_feature_exchange_all2all",
                                                   "66_gnn_feature_exchange_all2all_backward",
                                                   "67_gnn_sparse_embedding_all2all",
                                                   "68_gnn_sparse_feature_fetch_projection",
                                                   "69_gnn_negative_scoring",
                                                   "70_torchrec_kjt_all2all",
                                                   "71_hyena_conv1d_boundary_exchange",
                                                   "72_hyena_forward_cp",
                                                   "73_vocab_parallel_cross_entropy_loss",
                                                   "74_fla_kimi_delta_attention_cp_tp",
                                                   "75_fla_gated_deltanet_cp",
                                                   "76_opensora_conv3d_allreduce",
                                                   "77_magi1_cso_async_attention",
                                                   "78_magi1_tile_parallel_vae_decode",
                                                   "79_dinov2_distributed_knn",
                                                   "80_dinov2_distributed_sinkhorn_knopp",
                                                   "81_sam3_allgather_iou_suppression",
                                                   "82_vocab_parallel_log_prob_topk",
                                                   "83_vocab_parallel_log_prob_topk_chunked",
                                                   "84_vocab_parallel_log_prob_topk_chunked_backward",
                                                   "85_distributed_sample_sort",
                                                   "86_tp_muon_orthogonalization",
                                                   "87_conv2d_boundary_exchange"};
    return stems;
}

std::string unknown_problem_message(const std::string& typed) {
    std::vector<std::string> native;
    for (const Problem* p : all_problems())
        native.push_back(p->info().stem);
    const std::string head = "unknown problem '" + typed + "'";
    // A PKB problem by number, stem or name that this pkbw has no native port of.
    for (const auto& stem : pkb_problem_stems()) {
        const std::string number = stem.substr(0, stem.find('_'));
        if (typed != number && typed != stem && typed != std::string(without_number(stem)))
            continue;
        if (std::find(native.begin(), native.end(), stem) != native.end())
            break; // a native problem after all (find_problem missed it: a different spelling)
        const auto ported =
            std::count_if(pkb_problem_stems().begin(), pkb_problem_stems().end(), [&](const auto& s) {
                return std::find(native.begin(), native.end(), s) != native.end();
            });
        return head + ": PKB's problem " + stem + ", a PKB problem pkbw does not implement natively (" +
               std::to_string(ported) + " of PKB's " + std::to_string(pkb_problem_stems().size()) +
               " are; pkbw problems lists them); run PKB's solutions with --pkb-checkout DIR";
    }
    if (!all_digits(typed)) {
        const auto close = closest_names(typed, native);
        if (!close.empty()) {
            std::string list;
            for (const auto& name : close)
                list += (list.empty() ? "" : ", ") + name;
            return head + "; did you mean " + list + "? (pkbw problems lists all " +
                   std::to_string(native.size()) + ")";
        }
    }
    return head + " (pkbw problems lists the " + std::to_string(native.size()) +
           " problems, by number and stem)";
}

} // namespace pkbw::cli
