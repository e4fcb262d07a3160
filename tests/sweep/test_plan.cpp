// Placing solution files at problems by name (issue 17): PKB's historic generation folders number
// problems 33-87 one higher than PKB's HEAD; a number alone never places a file.
#include "pkbw/core/error.h"
#include "sweep_exec.h"
#include "sweep_plan.h"

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <map>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace pkbw;
using namespace pkbw::cli;

namespace {

class PlanTest : public ::testing::Test {
protected:
    void SetUp() override {
        static std::atomic<int> counter{0};
        root_ = fs::temp_directory_path() /
                ("pkbw_plan_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
        fs::remove_all(root_);
        dir_ = root_ / "solutions_cuda_bf16_h100_8_anthropic_claude-opus-4-7";
        fs::create_directories(dir_);
    }
    void TearDown() override { fs::remove_all(root_); }
    void touch(const std::string& name) { std::ofstream(dir_ / name) << "# " << name << "\n"; }

    // As PKB's HEAD numbers them (a slice).
    const std::vector<KnownProblem> head_ = {{1, "1_allreduce"},
                                             {11, "11_allgather_gemm_AT"},
                                             {12, "12_allgather_gemm"},
                                             {14, "14_gemm_allgather"},
                                             {33, "33_ulysses_all_to_all_tensor_primitive"},
                                             {34, "34_ulysses_all_gather_into_tensor_primitive"},
                                             {47, "47_fsdp_step_e2e"},
                                             {48, "48_fsdp_and_tp"}};
    fs::path root_, dir_;
};

TEST_F(PlanTest, HistoricFolderIsPlacedByNameNeverByNumber) {
    touch("1_allreduce_cuda.py");
    touch("11_gemm_allgather_AT_cuda.py");                   // words reordered since
    touch("34_ulysses_all_to_all_tensor_primitive_cuda.py"); // HEAD's 33
    touch("35_ulysses_all_gather_into_tensor_primitive_cuda.py");
    touch("47_fsdp_adamw_sharded_cuda.py"); // removed from PKB: its number is HEAD's fsdp_step_e2e
    touch("48_fsdp_step_e2e_cuda.py");      // HEAD's 47, not HEAD's 48
    touch("49_fsdp_and_tp_cuda.py");
    touch("12_gemm_allgather_cuda.py");  // is HEAD's 12_allgather_gemm, while its name is HEAD's 14's
    touch("14_gemm_allscatter_cuda.py"); // is HEAD's 14_gemm_allgather, under a name that no longer exists
    touch("README.md");
    touch("5_scatter_cuda.cu");
    const std::vector<int> all = {1, 11, 12, 14, 33, 34, 47, 48};
    SweepPlan plan = plan_sweep({dir_}, head_, all, ".py");

    std::map<std::string, std::string> placed; // problem -> file
    for (const auto& p : plan.pairs)
        placed[p.problem_stem] = fs::path(p.solution_path).filename().string();
    EXPECT_EQ(placed.size(), 6u);
    EXPECT_EQ(placed["1_allreduce"], "1_allreduce_cuda.py");
    EXPECT_EQ(placed["11_allgather_gemm_AT"], "11_gemm_allgather_AT_cuda.py");
    EXPECT_EQ(placed["33_ulysses_all_to_all_tensor_primitive"],
              "34_ulysses_all_to_all_tensor_primitive_cuda.py");
    EXPECT_EQ(placed["34_ulysses_all_gather_into_tensor_primitive"],
              "35_ulysses_all_gather_into_tensor_primitive_cuda.py");
    EXPECT_EQ(placed["47_fsdp_step_e2e"], "48_fsdp_step_e2e_cuda.py");
    EXPECT_EQ(placed["48_fsdp_and_tp"], "49_fsdp_and_tp_cuda.py");

    // The mapping says how each was placed.
    const auto& mapping = plan.mapping.at(dir_.filename().string());
    EXPECT_EQ(mapping.at("34_ulysses_all_to_all_tensor_primitive_cuda.py").at("renumbered"), true);
    EXPECT_EQ(mapping.at("1_allreduce_cuda.py").at("renumbered"), false);
    EXPECT_EQ(mapping.at("11_gemm_allgather_AT_cuda.py").at("placed_by"), "name tokens");

    // What could not be placed is reported, with why; README is no solution and is not listed.
    std::map<std::string, std::string> unplaced;
    for (const auto& u : plan.unplaced)
        unplaced[u.file] = u.reason;
    ASSERT_EQ(unplaced.size(), 4u);
    // Name and number disagree (the name is 14's, the number 12's, same words): not guessed, and
    // in particular never run against 14_gemm_allgather.
    EXPECT_NE(unplaced["12_gemm_allgather_cuda.py"].find("ambiguous"), std::string::npos)
        << unplaced["12_gemm_allgather_cuda.py"];
    EXPECT_NE(unplaced["14_gemm_allscatter_cuda.py"].find("no problem is named 'gemm_allscatter'"),
              std::string::npos);
    EXPECT_EQ(placed.count("12_allgather_gemm"), 0u);
    EXPECT_EQ(placed.count("14_gemm_allgather"), 0u);
    EXPECT_NE(unplaced["47_fsdp_adamw_sharded_cuda.py"].find("no problem is named 'fsdp_adamw_sharded'"),
              std::string::npos);
    EXPECT_NE(unplaced["47_fsdp_adamw_sharded_cuda.py"].find("47_fsdp_step_e2e"), std::string::npos);
    EXPECT_NE(unplaced["5_scatter_cuda.cu"].find(".cu"), std::string::npos);
}

TEST_F(PlanTest, SelectionAndOneFilePerProblem) {
    touch("1_allreduce_cuda.py");
    touch("7_allreduce_triton.py"); // a second file for the same problem, under another number
    touch("48_fsdp_step_e2e_cuda.py");
    touch("18_rms_norm_cuda.py"); // no such problem, and 18 is not selected: not this sweep's concern
    SweepPlan plan = plan_sweep({dir_}, head_, {1, 11}, ".py");
    ASSERT_EQ(plan.pairs.size(), 1u); // 47 not selected; 11 has no file
    EXPECT_EQ(plan.pairs[0].problem_stem, "1_allreduce");
    EXPECT_EQ(plan.missing.at(dir_.filename().string()), nlohmann::json({"11_allgather_gemm_AT"}));
    ASSERT_EQ(plan.unplaced.size(), 1u);
    EXPECT_EQ(plan.unplaced[0].file,
              "7_allreduce_triton.py"); // 1_allreduce_cuda.py is problem 1 by number too
    EXPECT_NE(plan.unplaced[0].reason.find("claimed by 2 files"), std::string::npos)
        << plan.unplaced[0].reason;
    // Kept apart, not lost: printed as a count, listed under --json.
    ASSERT_EQ(plan.unplaced_elsewhere.size(), 1u);
    EXPECT_EQ(plan.unplaced_elsewhere[0].file, "18_rms_norm_cuda.py");
    // With every problem selected, every unplaced file is the sweep's concern.
    const SweepPlan all = plan_sweep({dir_}, head_, {1, 11, 12, 14, 33, 34, 47, 48}, ".py");
    EXPECT_TRUE(all.unplaced_elsewhere.empty());
    EXPECT_EQ(all.unplaced.size(), 2u);
}

TEST_F(PlanTest, ByHandPlacementWins) {
    touch("12_gemm_allgather_cuda.py");
    SweepPlan plan = plan_sweep({dir_}, head_, {12, 14}, ".py", {{"12_gemm_allgather_cuda.py", "12"}});
    ASSERT_EQ(plan.pairs.size(), 1u);
    EXPECT_EQ(plan.pairs[0].problem_stem, "12_allgather_gemm");
    EXPECT_EQ(plan.pairs[0].placed_by, "by hand");
    EXPECT_THROW(plan_sweep({dir_}, head_, {12}, ".py", {{"12_gemm_allgather_cuda.py", "99"}}), Error);
}

TEST_F(PlanTest, SingleRunsPlaceByTheSameRules) {
    touch("1_allreduce_cuda.py");
    touch("1_allreduce_triton.py");
    touch("11_gemm_allgather_AT_cuda.py");
    touch("12_gemm_allgather_cuda.py");
    touch("34_ulysses_all_to_all_tensor_primitive_cuda.py");
    touch("35_ulysses_all_gather_into_tensor_primitive_cuda.py");
    touch("47_fsdp_adamw_sharded_cuda.py");
    touch("48_fsdp_step_e2e_cuda.py");
    touch("49_fsdp_and_tp_cuda.py");
    // What a single run finds for each problem is what the sweep places there (cuda files only: the
    // sweep's folder holds one backend).
    fs::remove(dir_ / "1_allreduce_triton.py");
    const std::vector<int> all = {1, 11, 12, 14, 33, 34, 47, 48};
    const SweepPlan plan = plan_sweep({dir_}, head_, all, ".py");
    std::map<std::string, std::string> swept;
    for (const auto& p : plan.pairs)
        swept[p.problem_stem] = p.solution_path;
    touch("1_allreduce_triton.py");
    for (const auto& problem : head_) {
        const SolutionLookup lookup = find_solution_file(dir_, head_, problem.stem, "cuda", ".py");
        EXPECT_EQ(lookup.file.filename().string(),
                  swept.count(problem.stem) ? fs::path(swept[problem.stem]).filename().string() : "")
            << problem.stem;
        EXPECT_EQ(lookup.error.empty(), !lookup.file.empty()) << problem.stem;
    }

    // A renumbered file says which it is.
    SolutionLookup found =
        find_solution_file(dir_, head_, "33_ulysses_all_to_all_tensor_primitive", "cuda", ".py");
    EXPECT_EQ(found.file.filename(), "34_ulysses_all_to_all_tensor_primitive_cuda.py");
    EXPECT_TRUE(found.renumbered);
    EXPECT_EQ(found.placed_by, "name");
    EXPECT_NE(found.note.find("placed 34_ulysses_all_to_all_tensor_primitive_cuda.py at "
                              "33_ulysses_all_to_all_tensor_primitive"),
              std::string::npos)
        << found.note;
    // The file named as expected says nothing more; the backend picks among a problem's files.
    found = find_solution_file(dir_, head_, "1_allreduce", "cuda", ".py");
    EXPECT_EQ(found.file.filename(), "1_allreduce_cuda.py");
    EXPECT_EQ(found.note, "");
    EXPECT_EQ(find_solution_file(dir_, head_, "1_allreduce", "triton", ".py").file.filename(),
              "1_allreduce_triton.py");

    // A miss names the expected file, lists the closest (the ambiguous one first, with why) and --place.
    SolutionLookup miss = find_solution_file(dir_, head_, "12_allgather_gemm", "cuda", ".py");
    EXPECT_TRUE(miss.file.empty());
    EXPECT_NE(miss.error.find("solution file not found: " + (dir_ / "12_allgather_gemm_cuda.py").string()),
              std::string::npos)
        << miss.error;
    EXPECT_NE(miss.error.find("closest files there:\n    12_gemm_allgather_cuda.py  (not placed: ambiguous"),
              std::string::npos)
        << miss.error;
    EXPECT_NE(miss.error.find("--place FILE=12"), std::string::npos) << miss.error;
    // ... and --place places it, by hand.
    found =
        find_solution_file(dir_, head_, "12_allgather_gemm", "cuda", ".py", {"12_gemm_allgather_cuda.py=12"});
    EXPECT_EQ(found.file.filename(), "12_gemm_allgather_cuda.py");
    EXPECT_EQ(found.placed_by, "by hand");
    EXPECT_NE(
        find_solution_file(dir_, head_, "12_allgather_gemm", "cuda", ".py", {"12_gemm_allgather_cuda.py"})
            .error.find("expected FILE=PROBLEM"),
        std::string::npos);
    EXPECT_NE(find_solution_file(dir_, head_, "12_allgather_gemm", "cuda", ".py", {"nothing_cuda.py=12"})
                  .error.find("no such file"),
              std::string::npos);
    EXPECT_NE(find_solution_file(dir_ / "absent", head_, "1_allreduce", "cuda", ".py")
                  .error.find("solutions directory not found"),
              std::string::npos);
}

TEST_F(PlanTest, AFileNamedForAnotherProblem) {
    const std::vector<KnownProblem> head = {{40, "40_ddp"},
                                            {41, "41_zero1_optimizer_shard"},
                                            {12, "12_allgather_gemm"},
                                            {14, "14_gemm_allgather"},
                                            {47, "47_fsdp_step_e2e"},
                                            {48, "48_fsdp_and_tp"}};
    // PKB's historic 41_ddp_cuda.py is HEAD's 40_ddp, not HEAD's 41.
    EXPECT_EQ(file_names_other_problem("41_ddp_cuda.py", head, "41_zero1_optimizer_shard"),
              "40_ddp (by its name)");
    EXPECT_EQ(file_names_other_problem("41_ddp_cuda.py", head, "40_ddp"), std::nullopt);
    EXPECT_EQ(file_names_other_problem("42_zero1_optimizer_shard_cuda.py", head, "41_zero1_optimizer_shard"),
              std::nullopt);
    // Ambiguous between two problems: either may be asked for, a third may not.
    EXPECT_EQ(file_names_other_problem("12_gemm_allgather_cuda.py", head, "12_allgather_gemm"), std::nullopt);
    EXPECT_EQ(file_names_other_problem("12_gemm_allgather_cuda.py", head, "14_gemm_allgather"), std::nullopt);
    EXPECT_NE(file_names_other_problem("12_gemm_allgather_cuda.py", head, "40_ddp")
                  .value_or("")
                  .find("14_gemm_allgather or 12_allgather_gemm"),
              std::string::npos);
    // No problem number or no known name: accepted (a number alone never names a problem).
    EXPECT_EQ(file_names_other_problem("candidate.cu", head, "40_ddp"), std::nullopt);
    EXPECT_EQ(file_names_other_problem("47_fsdp_adamw_sharded_cuda.py", head, "48_fsdp_and_tp"),
              std::nullopt);
    // Native names, with and without a backend word.
    const auto native = native_problems();
    EXPECT_NE(file_names_other_problem("1_allreduce_host.cpp", native, "2_allgather")
                  .value_or("")
                  .find("1_allreduce"),
              std::string::npos);
    EXPECT_EQ(file_names_other_problem("2_allgather.cpp", native, "2_allgather"), std::nullopt);
    EXPECT_EQ(file_names_other_problem("2_allgather_bad.cpp", native, "2_allgather"), std::nullopt);
    EXPECT_EQ(file_names_other_problem("11_allgather_gemm_AT.cu", native, "11_allgather_gemm_AT"),
              std::nullopt);
    const std::string refusal = solution_name_refusal("/s/1_allreduce_host.cpp", native, "2_allgather");
    EXPECT_NE(refusal.find(
                  "/s/1_allreduce_host.cpp is named for problem 1_allreduce (by its name), not 2_allgather"),
              std::string::npos)
        << refusal;
    EXPECT_NE(refusal.find("--ignore-name"), std::string::npos);
}

TEST(SweepSelection, Parses) {
    const std::vector<KnownProblem> known = {{1, "1_a"}, {2, "2_b"}, {3, "3_c"}, {5, "5_e"}};
    EXPECT_EQ(parse_problem_selection("all", known), (std::vector<int>{1, 2, 3, 5}));
    EXPECT_EQ(parse_problem_selection("1-3", known), (std::vector<int>{1, 2, 3}));
    EXPECT_EQ(parse_problem_selection("5,1-2", known), (std::vector<int>{1, 2, 5}));
    EXPECT_THROW(parse_problem_selection("1-5", known), Error); // 4 is unknown
    EXPECT_THROW(parse_problem_selection("x", known), Error);
    EXPECT_THROW(parse_problem_selection("3-1", known), Error);
}

TEST(SweepSelection, NativeProblemsMatchTheSampleFolders) {
    // Every sample solution of the repository is placed at the problem its file name says.
    const fs::path samples = fs::path(PKBW_TEST_SOURCE_ROOT) / "samples";
    for (const auto& [folder, ext] : std::vector<std::pair<std::string, std::string>>{
             {"solutions_host_f32_none_samples_baseline", ".cpp"},
             {"solutions_cuda_bf16_h200_2_samples_baseline", ".cu"}}) {
        const auto known = native_problems();
        SweepPlan plan = plan_sweep({samples / folder}, known, parse_problem_selection("all", known), ext);
        EXPECT_TRUE(plan.unplaced.empty()) << folder << ": " << plan.unplaced[0].file;
        EXPECT_FALSE(plan.pairs.empty());
        for (const auto& p : plan.pairs)
            EXPECT_TRUE(fs::path(p.solution_path).filename().string().starts_with(p.problem_stem + "_"))
                << p.solution_path;
    }
}

} // namespace

namespace pkbw::cli {
namespace {

// The slots of a sweep on GPUs (CUDA_VISIBLE_DEVICES lists them): disjoint sets of W GPUs; an eval may
// put several runs on each (--runs-per-gpu: on one H200 the torch extension builds of PKB's solutions
// took about 95 s each, so ten at once is what made all 87 fit), spread over the GPUs first; perf never
// shares, whatever is asked.
TEST(SweepSlots, EvalRunsMayShareAGpuAndPerfNever) {
    const char* before = std::getenv("CUDA_VISIBLE_DEVICES");
    const std::string saved = before ? before : "";
    ::setenv("CUDA_VISIBLE_DEVICES", "0,1,2,3", 1);
    SweepRecord sweep;
    sweep.backend = "cuda";
    sweep.world_size = 2;
    sweep.mode = "eval";
    SweepContext context;
    using Slots = std::vector<std::vector<std::string>>;
    EXPECT_EQ(run_slots(sweep, context), (Slots{{"0", "1"}, {"2", "3"}}));
    context.runs_per_gpu = 3;
    EXPECT_EQ(run_slots(sweep, context),
              (Slots{{"0", "1"}, {"2", "3"}, {"0", "1"}, {"2", "3"}, {"0", "1"}, {"2", "3"}}));
    context.jobs = 3;
    EXPECT_EQ(run_slots(sweep, context), (Slots{{"0", "1"}, {"2", "3"}, {"0", "1"}}));
    context.jobs = 0;
    sweep.options["run_args"] = {"--trials", "1", "--perf"}; // an eval sweep whose every run also times
    EXPECT_EQ(run_slots(sweep, context), (Slots{{"0", "1"}})) << "timed runs own the node, as perf's";
    sweep.options["run_args"] = {"--trials", "1"};
    sweep.mode = "perf";
    EXPECT_EQ(run_slots(sweep, context), (Slots{{"0", "1"}})) << "timing owns the node";
    if (before)
        ::setenv("CUDA_VISIBLE_DEVICES", saved.c_str(), 1);
    else
        ::unsetenv("CUDA_VISIBLE_DEVICES");
}

} // namespace
} // namespace pkbw::cli
