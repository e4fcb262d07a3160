#include "pkbw/core/generation.h"

#include <gtest/gtest.h>

namespace {

struct Expected {
    const char* folder;
    const char* backend;
    const char* precision;
    const char* hardware;
    const char* provider;
    const char* model;
};

void expect_parsed(const Expected& e) {
    auto g = pkbw::parse_generation_label(e.folder);
    SCOPED_TRACE(e.folder);
    EXPECT_TRUE(g.parsed);
    EXPECT_EQ(g.label, e.folder);
    EXPECT_EQ(g.backend, e.backend);
    EXPECT_EQ(g.precision, e.precision);
    EXPECT_EQ(g.hardware, e.hardware);
    EXPECT_EQ(g.provider, e.provider);
    EXPECT_EQ(g.model, e.model);
}

// The five historical PKB trees (pkb-harness.md §1, §9.5), named as generate_kernel.py (§9.2) does.
TEST(Generation, PkbTrees) {
    expect_parsed({"solutions_cuda_bf16_none_anthropic_claude-opus-4-7", "cuda", "bf16", "none", "anthropic",
                   "claude-opus-4-7"});
    expect_parsed({"solutions_cuda_bf16_none_google_gemini-3-pro-preview", "cuda", "bf16", "none", "google",
                   "gemini-3-pro-preview"});
    expect_parsed({"solutions_cuda_bf16_none_openai_gpt-5.5", "cuda", "bf16", "none", "openai", "gpt-5.5"});
    expect_parsed({"solutions_triton_bf16_none_google_gemini-3-pro-preview", "triton", "bf16", "none",
                   "google", "gemini-3-pro-preview"});
    expect_parsed({"solutions_parallelkittens_bf16_none_google_gemini-3-pro-preview", "parallelkittens",
                   "bf16", "none", "google", "gemini-3-pro-preview"});
}

// Hardware and model slugs that contain '_' themselves.
TEST(Generation, UnderscoresInHardwareAndModel) {
    expect_parsed(
        {"solutions_cuda_bf16_h200_2_samples_baseline", "cuda", "bf16", "h200_2", "samples", "baseline"});
    expect_parsed({"solutions_cuda_fp16_h100_8_together_zai-org_GLM-5.1", "cuda", "fp16", "h100_8",
                   "together", "zai-org_GLM-5.1"});
    expect_parsed({"solutions_triton_fp32_b200_72_together_Qwen_Qwen3-Coder-Next-FP8", "triton", "fp32",
                   "b200_72", "together", "Qwen_Qwen3-Coder-Next-FP8"});
    // A model slug that contains a provider name: the first provider after the hardware wins.
    expect_parsed({"solutions_cuda_bf16_none_together_openai_gpt-oss", "cuda", "bf16", "none", "together",
                   "openai_gpt-oss"});
}

TEST(Generation, UnknownProviderAfterNone) {
    expect_parsed({"solutions_cuda_bf16_none_acme_model-x_1", "cuda", "bf16", "none", "acme", "model-x_1"});
}

TEST(Generation, PathsUseTheSolutionsFolder) {
    auto g = pkbw::parse_generation_label(
        "/data/pkb/solutions_cuda_bf16_none_anthropic_claude-opus-4-7/17_gemm_allreduce_cuda.py");
    EXPECT_TRUE(g.parsed);
    EXPECT_EQ(g.label, "solutions_cuda_bf16_none_anthropic_claude-opus-4-7");
    EXPECT_EQ(g.model, "claude-opus-4-7");
    // The last "solutions_" component counts; a trailing slash is fine.
    g = pkbw::parse_generation_label("/x/solutions_old/nested/solutions_cuda_bf16_h200_2_samples_baseline/");
    EXPECT_EQ(g.label, "solutions_cuda_bf16_h200_2_samples_baseline");
    EXPECT_EQ(g.hardware, "h200_2");
}

TEST(Generation, UnparsableKeepsTheFolderName) {
    auto g = pkbw::parse_generation_label("solutions_cuda");
    EXPECT_FALSE(g.parsed);
    EXPECT_EQ(g.label, "solutions_cuda");
    EXPECT_EQ(g.backend, "cuda"); // PKB's default folder still says which backend

    g = pkbw::parse_generation_label("solutions_cuda_bf16_h100_8_acme_model");
    EXPECT_FALSE(g.parsed); // unknown provider and hardware other than "none": ambiguous
    EXPECT_EQ(g.label, "solutions_cuda_bf16_h100_8_acme_model");
    EXPECT_TRUE(g.hardware.empty());
    EXPECT_TRUE(g.provider.empty());

    g = pkbw::parse_generation_label("/home/me/my_kernels/allreduce_cuda.py");
    EXPECT_FALSE(g.parsed);
    EXPECT_EQ(g.label, "my_kernels");

    g = pkbw::parse_generation_label("solutions_cuda_bf16_none_anthropic"); // no model
    EXPECT_FALSE(g.parsed);
    EXPECT_EQ(pkbw::parse_generation_label("").label, "");
    EXPECT_FALSE(pkbw::parse_generation_label("solutions_").parsed);
    EXPECT_FALSE(pkbw::parse_generation_label("solutions____").parsed);
}

} // namespace
