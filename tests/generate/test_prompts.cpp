// PKB's kernelgen prompts from the miniature checkout under data/mini_pkb (written for these tests;
// expected/ holds prompts derived by hand from PKB's assembly rules), and pkbw's native prompt.
#include "native_prompt.h"
#include "pkb_prompt.h"
#include "pkbw/core/error.h"
#include "pkbw/problems/registry.h"
#include "pyformat.h"

#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <sstream>

using namespace pkbw;
using namespace pkbw::generate;
namespace fs = std::filesystem;

namespace {

const fs::path kData = fs::path(PKBW_TEST_SOURCE_ROOT) / "tests" / "generate" / "data";
const fs::path kMini = kData / "mini_pkb";

std::string read_file(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

} // namespace

TEST(PyFormat, NamedFieldsAndEscapedBraces) {
    EXPECT_EQ(python_format("a {x} {{y}} }}", {{"x", "{z}"}}, "t"), "a {z} {y} }");
    EXPECT_THROW(python_format("{missing}", {}, "t"), FormatError);
    EXPECT_THROW(python_format("single } brace", {}, "t"), FormatError);
    EXPECT_THROW(python_format("{x:>4}", {{"x", "1"}}, "t"), FormatError);
    try {
        python_format("{nope}", {}, "prompts.toml: shared.instruction");
        FAIL();
    } catch (const FormatError& e) {
        EXPECT_NE(std::string(e.what()).find("shared.instruction"), std::string::npos);
        EXPECT_NE(std::string(e.what()).find("{nope}"), std::string::npos);
    }
}

TEST(PyFormat, StripIsPythonsWhitespace) {
    EXPECT_EQ(python_strip(" \t\n\x0b\x0c\r\x1c x y \n"), "x y");
    EXPECT_EQ(python_strip("\xc2\xa0"
                           "a"
                           "\xe2\x80\x83"),
              "a");                                  // NBSP, EM SPACE
    EXPECT_EQ(python_strip("\xc3\xa9"), "\xc3\xa9"); // e-acute is not space
    EXPECT_EQ(python_strip("   "), "");
}

TEST(PkbPrompt, ModelSlugAndFolder) {
    EXPECT_EQ(pkb_model_slug("zai-org/GLM-5.1"), "zai-org_GLM-5.1");
    EXPECT_EQ(pkb_model_slug(" a b//c "), "a_b_c");
    EXPECT_EQ(pkb_model_slug("///"), "model");
    EXPECT_EQ(pkb_model_slug(std::string(100, 'x')).size(), 72u);
    EXPECT_EQ(pkb_output_dir("cuda", "bf16", std::nullopt, "google", "gemini-3-flash-preview"),
              "solutions_cuda_bf16_none_google_gemini-3-flash-preview");
    EXPECT_EQ(pkb_output_dir("triton", "fp16", "h100_8", "together", "Qwen/Qwen3-Coder-Next-FP8"),
              "solutions_triton_fp16_h100_8_together_Qwen_Qwen3-Coder-Next-FP8");
}

TEST(PkbPrompt, ResolvesProblemsAsPkbDoes) {
    PkbPrompts pkb = PkbPrompts::load(kMini);
    EXPECT_EQ(pkb.resolve_problems("1"), std::vector<std::string>{"1_sum"});
    EXPECT_EQ(pkb.resolve_problems("10"), std::vector<std::string>{"10_ten"});
    EXPECT_EQ(pkb.resolve_problems("2_gather.py"), std::vector<std::string>{"2_gather"});
    EXPECT_EQ(pkb.resolve_problems("ALL"), (std::vector<std::string>{"10_ten", "1_sum", "2_gather"}));
    EXPECT_EQ(pkb.resolve_problems("[2, 1, 2]"), (std::vector<std::string>{"2_gather", "1_sum"}));
    EXPECT_THROW(pkb.resolve_problems("7"), Error);
    EXPECT_EQ(pkb.default_backend(), "cuda");
}

TEST(PkbPrompt, OneShotWithoutHardwareMatchesHandDerivedPrompt) {
    PkbPrompts pkb = PkbPrompts::load(kMini);
    std::string prompt = pkb.user_prompt(
        {"1_sum", "cuda", "bf16", std::nullopt, "solutions_cuda_bf16_none_google_m1/1_sum_cuda.py"});
    EXPECT_EQ(prompt, read_file(kData / "expected" / "cuda_bf16_none_1_sum.txt"));
}

TEST(PkbPrompt, FewShotWithHardwareAndCrlfReferenceMatchesHandDerivedPrompt) {
    PkbPrompts pkb = PkbPrompts::load(kMini);
    std::string prompt = pkb.user_prompt(
        {"2_gather", "parallelkittens", "fp32", "tiny_2",
         "solutions_parallelkittens_fp32_tiny_2_together_zai-org_GLM-5.1/2_gather_parallelkittens.py"});
    EXPECT_EQ(prompt, read_file(kData / "expected" / "parallelkittens_fp32_tiny_2_2_gather.txt"));
}

TEST(PkbPrompt, EveryBackendPrecisionAndHardwareCombination) {
    PkbPrompts pkb = PkbPrompts::load(kMini);
    const std::string one_shot = read_file(kData / "expected" / "cuda_bf16_none_1_sum.txt");
    int combinations = 0;
    for (const auto& backend : {"cuda", "triton", "parallelkittens"})
        for (const auto& [precision, display] :
             {std::pair{"fp32", "FP32"}, std::pair{"fp16", "FP16"}, std::pair{"bf16", "BF16"}})
            for (const std::optional<std::string>& hw :
                 {std::optional<std::string>{}, std::optional<std::string>{"tiny_2"}}) {
                std::string p = pkb.user_prompt({"1_sum", backend, precision, hw, "X/1_sum.py"});
                ++combinations;
                EXPECT_NE(p.find(std::string("Precision: ") + display + "."), std::string::npos) << backend;
                EXPECT_EQ(p.find("HW header.") != std::string::npos, hw.has_value()) << backend;
                EXPECT_NE(p.find("return {'sum': t}"), std::string::npos); // reference braces kept
                EXPECT_TRUE(p.ends_with(
                    "saved as: X/1_sum.py\nProduce the complete Python file contents for that path."));
                bool few = std::string(backend) == "parallelkittens";
                EXPECT_EQ(p.find("Examples of PK:") != std::string::npos, few);
                if (std::string(backend) == "triton")
                    EXPECT_NE(p.find("\nExample 1\nIN:"), std::string::npos); // the default label
                // Only the precision sentence, the hardware section and the footer depend on them.
                if (std::string(backend) == "cuda" && !hw) {
                    std::string expected = one_shot;
                    expected.replace(expected.find("BF16"), 4, display);
                    expected.replace(expected.find("solutions_cuda_bf16_none_google_m1/1_sum_cuda.py"),
                                     std::string("solutions_cuda_bf16_none_google_m1/1_sum_cuda.py").size(),
                                     "X/1_sum.py");
                    EXPECT_EQ(p, expected) << precision;
                }
            }
    EXPECT_EQ(combinations, 18);
}

TEST(PkbPrompt, SystemMessages) {
    PkbPrompts pkb = PkbPrompts::load(kMini);
    EXPECT_EQ(pkb.system_prompt("parallelkittens"), "PK system.");
    // No generate_kernel_system_prompt: the checkout's script's SYSTEM_PROMPT.
    EXPECT_EQ(pkb.system_prompt("cuda"), "Mini system.\nSecond line.");
}

TEST(PkbPrompt, BadConfigurationsNameTheFileAndKey) {
    fs::path dir = fs::temp_directory_path() / ("pkbw_prompt_bad_" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::copy(kMini, dir, fs::copy_options::recursive);
    { std::ofstream(dir / "kernelgen" / "prompts.toml") << "[meta]\nversion = \n"; }
    try {
        PkbPrompts::load(dir);
        FAIL();
    } catch (const FormatError& e) {
        EXPECT_NE(std::string(e.what()).find("prompts.toml:2"), std::string::npos) << e.what();
    }
    std::string toml = read_file(kMini / "kernelgen" / "prompts.toml");
    toml.replace(toml.find("Precision: {precision_display}"), 30, "Precision: {precision_name}.");
    { std::ofstream(dir / "kernelgen" / "prompts.toml") << toml; }
    try {
        PkbPrompts::load(dir).user_prompt({"1_sum", "cuda", "bf16", std::nullopt, "x"});
        FAIL();
    } catch (const FormatError& e) {
        EXPECT_NE(std::string(e.what()).find("templates.common.precision_note"), std::string::npos)
            << e.what();
        EXPECT_NE(std::string(e.what()).find("{precision_name}"), std::string::npos) << e.what();
    }
    PkbPrompts good = PkbPrompts::load(kMini);
    EXPECT_THROW(good.user_prompt({"1_sum", "cuda", "bf16", std::string("h999"), "x"}), FormatError);
    EXPECT_THROW(good.user_prompt({"1_sum", "opencl", "bf16", std::nullopt, "x"}), FormatError);
    EXPECT_THROW(good.user_prompt({"99_none", "cuda", "bf16", std::nullopt, "x"}), Error);
    fs::remove_all(dir);
}

TEST(NativePrompt, ContractAbiExampleAndTarget) {
    const Problem* problem = find_problem("2");
    ASSERT_NE(problem, nullptr);
    NativeSources sources{PKBW_TEST_SOURCE_ROOT,
                          fs::path(PKBW_TEST_SOURCE_ROOT) / "abi/include/pkbw/solution.h"};
    NativePromptRequest request;
    request.problem = problem;
    request.target = "host";
    request.precision = "fp32";
    request.world_size = 3;
    request.hardware = "2 x Test GPU";
    request.solution_relative_path = "solutions_host_fp32_none_local_m/2_allgather_host.cpp";
    std::string p = native_user_prompt(request, sources);
    EXPECT_NE(p.find(problem->info().title), std::string::npos);
    EXPECT_NE(p.find("- rank 2: inputs 0: `"), std::string::npos); // one line per rank
    EXPECT_NE(p.find("f32 [3, 1024, 1024]"), std::string::npos);   // the gathered output, W = 3
    EXPECT_NE(p.find("extern \"C\" int pkbw_solution"), std::string::npos);
    EXPECT_NE(p.find("struct TensorView"), std::string::npos);                  // the header itself
    EXPECT_NE(p.find("2_allgather_host.cpp):\n\n```cpp\n"), std::string::npos); // its own baseline
    EXPECT_NE(p.find("- Hardware: 2 x Test GPU."), std::string::npos);
    EXPECT_TRUE(p.ends_with("saved as: solutions_host_fp32_none_local_m/2_allgather_host.cpp\n"));
    request.precision = "int3";
    EXPECT_THROW(native_user_prompt(request, sources), Error);
    // A problem with no baseline of its own shows problem 1's, labelled as such.
    request.precision = "bf16";
    request.problem = find_problem("9");
    ASSERT_NE(request.problem, nullptr);
    request.target = "cuda";
    p = native_user_prompt(request, sources);
    EXPECT_NE(p.find("A baseline for problem 1 (all-reduce), to show the syntax only"), std::string::npos);
    EXPECT_NE(p.find("bf16"), std::string::npos);
}
