// Which file and which problem a run judges, and what it refuses before its ranks start: the folder's
// name rules, files named for another problem, PKB checkouts' renumbered folders, world sizes a problem
// cannot run at (execute_run with the fake rank program, as test_run.cpp).
#include "run_test_fixture.h"

#include <gtest/gtest.h>
#include <string>

namespace fs = std::filesystem;
using namespace pkbw::cli;
using pkbw::test::kCandidate;
using pkbw::test::RunTest;

TEST_F(RunTest, MissingSolutionListsTheFolder) {
    auto o = options();
    fs::path folder = dir.path() / "solutions_x";
    for (const char* name : {"1_allreduce_cuda.cu", "2_allgather_host.cpp", "notes.txt"})
        dir.write(std::string("solutions_x/") + name, "//");
    o.solution = "host";
    o.solutions_dir = folder;
    ASSERT_EQ(run(o, memory), 2);
    std::string message = err.str();
    EXPECT_NE(message.find("solution file not found: " + (folder / "1_allreduce_host.cpp").string()),
              std::string::npos)
        << message;
    EXPECT_NE(
        message.find("1_allreduce_cuda.cu  (this problem, by name; a .cu file, this backend runs .cpp)"),
        std::string::npos)
        << message;
    EXPECT_NE(message.find("2_allgather_host.cpp  (names 2_allgather)"), std::string::npos) << message;
    EXPECT_EQ(message.find("notes.txt"), std::string::npos);
    EXPECT_NE(message.find("--place FILE=1"), std::string::npos) << message;
    const auto& r = only_run(); // resolved problem: recorded
    EXPECT_EQ(r.status, "error");
    EXPECT_EQ(r.exit_code, 2);
}

TEST_F(RunTest, UnknownProblemIsUsageErrorNotRecorded) {
    auto o = options();
    o.problem = "999_nothing";
    ASSERT_EQ(run(o, memory), 2);
    EXPECT_TRUE(memory.runs.empty());
    EXPECT_NE(err.str().find("unknown problem '999_nothing'"), std::string::npos);
}

TEST_F(RunTest, EvalOfTheReferenceIsRefused) {
    auto o = options();
    o.solution = "reference";
    ASSERT_EQ(run(o, memory), 2);
    EXPECT_EQ(only_run().exit_code, 2);
}

TEST_F(RunTest, MulticastIsNotCheckedOnTheHostBackend) {
    // Multicast cannot matter on the host backend: a source that would be refused on cuda runs.
    auto o = options();
    o.solution =
        dir.write("mc/1_allreduce_host.cpp",
                  std::string(kCandidate) + "// fine\nstatic const char* p = \"multimem.st.global.f32\";\n")
            .string();
    ::setenv("NCCL_NVLS_ENABLE", "0", 1);
    int code = run(o, memory);
    ::unsetenv("NCCL_NVLS_ENABLE");
    ASSERT_EQ(code, 0) << err.str();
    EXPECT_EQ(only_run().status, "pass");
    EXPECT_EQ(err.str().find("multicast"), std::string::npos) << err.str();
}

TEST_F(RunTest, AFileNamedForAnotherProblemIsRefusedWithBothNames) {
    auto o = options();
    o.problem = "2";
    o.solution = dir.write("named/1_allreduce_host.cpp", kCandidate).string();
    ASSERT_EQ(run(o, memory), 2);
    const std::string message = err.str();
    EXPECT_NE(message.find(o.solution + " is named for problem 1_allreduce"), std::string::npos) << message;
    EXPECT_NE(message.find("not 2_allgather"), std::string::npos) << message;
    EXPECT_NE(message.find("--ignore-name"), std::string::npos) << message;
    EXPECT_EQ(only_run().exit_code, 2);
    EXPECT_EQ(only_run().start.problem_stem, "2_allgather");

    // The override: judged as the problem asked for (the fake rank passes whatever it is given).
    MemoryRecorder second;
    o.ignore_name = true;
    ASSERT_EQ(run(o, second), 0) << err.str();
    EXPECT_EQ(second.runs.begin()->second.start.problem_stem, "2_allgather");

    // Names that name no problem, or the one asked for, are accepted as before.
    for (const char* name : {"free/candidate.cpp", "free/2_allgather_v2_host.cpp", "free/2_allgather.cpp",
                             "free/2_allgather_host.cpp"}) {
        MemoryRecorder fine;
        o.ignore_name = false;
        o.solution = dir.write(name, kCandidate).string();
        EXPECT_EQ(run(o, fine), 0) << name << ": " << err.str();
    }
}

TEST_F(RunTest, AFolderIsSearchedByTheSweepsNameRules) {
    // A folder numbered differently: its 5_allreduce_host.cpp is problem 1 by its name.
    auto o = options();
    const fs::path folder = dir.path() / "solutions_host_f32_none_samples_renumbered";
    dir.write("solutions_host_f32_none_samples_renumbered/5_allreduce_host.cpp", kCandidate);
    dir.write("solutions_host_f32_none_samples_renumbered/1_broadcast_host.cpp", kCandidate);
    o.solution = "host";
    o.solutions_dir = folder;
    ASSERT_EQ(run(o, memory), 0) << err.str();
    EXPECT_EQ(only_run().start.solution_path, (folder / "5_allreduce_host.cpp").string());
    EXPECT_NE(
        err.str().find("placed 5_allreduce_host.cpp at 1_allreduce (by its name; the folder numbers this "
                       "problem differently)"),
        std::string::npos)
        << err.str();
}

TEST_F(RunTest, PkbFolderNumberedAsPkbsHistoryIsPlacedByName) {
    // The miniature checkout's HEAD numbers scale_gather 9 and varying_rows 10; this folder, written
    // under another numbering, one higher (as PKB's historic folders are for 33-87).
    const fs::path checkout = fs::path(PKBW_TEST_SOURCE_ROOT) / "tests/engine/pkb_checkout";
    const fs::path folder = dir.path() / "solutions_cuda_f32_none_samples_old";
    for (const char* name : {"2_allreduce_cuda.py", "10_scale_gather_cuda.py", "11_varying_row_cuda.py"})
        dir.write(std::string("solutions_cuda_f32_none_samples_old/") + name,
                  "def solution(x):\n    return x\n");
    auto o = options();
    o.pkb_checkout = checkout;
    o.solutions_dir = folder;
    o.solution = "";
    o.problem = "9";
    // A dtype PKB's worker does not take ends the run right after the solution is resolved and
    // recorded: no torch needed.
    o.dtype = "int8";
    ASSERT_EQ(run(o, memory), 2) << err.str();
    EXPECT_EQ(only_run().start.solution_path, (folder / "10_scale_gather_cuda.py").string());
    EXPECT_NE(
        err.str().find("placed 10_scale_gather_cuda.py at 9_scale_gather (by its name; the folder numbers "
                       "this problem differently)"),
        std::string::npos)
        << err.str();

    // A miss (the file's name is no problem's): the closest files, what each is, and --place.
    MemoryRecorder miss;
    o.problem = "10";
    ASSERT_EQ(run(o, miss), 2);
    std::string message = err.str();
    EXPECT_NE(message.find("solution file not found: " + (folder / "10_varying_rows_cuda.py").string()),
              std::string::npos)
        << message;
    EXPECT_NE(message.find("11_varying_row_cuda.py  (not placed: no problem is named 'varying_row'"),
              std::string::npos)
        << message;
    EXPECT_NE(message.find("10_scale_gather_cuda.py  (names 9_scale_gather)"), std::string::npos) << message;
    EXPECT_NE(message.find("--place FILE=10"), std::string::npos) << message;
    // ... which places it by hand.
    MemoryRecorder by_hand;
    o.place = {"11_varying_row_cuda.py=10"};
    ASSERT_EQ(run(o, by_hand), 2);
    EXPECT_EQ(by_hand.runs.begin()->second.start.solution_path, (folder / "11_varying_row_cuda.py").string());
    EXPECT_NE(err.str().find("placed 11_varying_row_cuda.py at 10_varying_rows (by hand, --place"),
              std::string::npos)
        << err.str();

    // A PKB file named for another of the checkout's problems is refused, naming both.
    MemoryRecorder named;
    o.place.clear();
    o.solutions_dir.reset();
    o.problem = "1";
    o.solution = (folder / "10_scale_gather_cuda.py").string();
    ASSERT_EQ(run(o, named), 2);
    EXPECT_NE(err.str().find("is named for problem 9_scale_gather (by its name), not 1_allreduce"),
              std::string::npos)
        << err.str();
}

TEST_F(RunTest, PkbRunAtAWorldSizeTheProblemCannotRunIsRefusedBeforeLaunch) {
    // PKB's 49 routes top-2 over E = W experts: at W = 1 its reference fails as the solution would.
    // Refused before the ranks start (no Python or torch needed), naming why; W = 2 passes this check
    // (the run then ends at the dtype PKB's worker does not take, again before any rank starts).
    dir.write("pkb/reference/49_moe_ep_balanced.py", "def solution(*args):\n    return args[0]\n");
    const fs::path solution = dir.write("pkb/solutions_cuda_bf16_none_x/49_moe_ep_balanced_cuda.py",
                                        "def solution(*args):\n    return args[0]\n");
    auto o = options();
    o.pkb_checkout = dir.path() / "pkb";
    o.problem = "49";
    o.solution = solution.string();
    o.nproc = 1;
    ASSERT_EQ(run(o, memory), 2) << err.str();
    const std::string message = err.str();
    EXPECT_NE(
        message.find("refused: 49_moe_ep_balanced: top-2 needs at least 2 experts, and E = W (got W = 1); "
                     "PKB's reference cannot run at W = 1 either (--nproc)"),
        std::string::npos)
        << message;
    EXPECT_EQ(only_run().exit_code, 2);
    EXPECT_EQ(only_run().status, "error");

    MemoryRecorder two;
    o.nproc = 2;
    o.dtype = "int8";
    ASSERT_EQ(run(o, two), 2) << err.str();
    EXPECT_EQ(err.str().find("cannot run at W"), std::string::npos) << err.str();
    EXPECT_NE(err.str().find("PKB's worker takes"), std::string::npos) << err.str();
}

// A host candidate written for float32 outside a folder named for its precision ran at PKB's bf16 and
// failed with no word of why (the CLI review): the header says where the dtype came from.
TEST_F(RunTest, TheHeaderSaysWhereTheDtypeCameFrom) {
    auto o = options();
    ASSERT_EQ(run(o, memory), 0) << err.str();
    EXPECT_NE(out.str().find("dtype=f32 (--dtype)"), std::string::npos) << out.str();
    o.dtype.clear(); // its folder is solutions_host_f32_none_samples_test
    ASSERT_EQ(run(o, memory), 0) << err.str();
    EXPECT_NE(out.str().find("dtype=f32 (the folder's name)"), std::string::npos) << out.str();
    o.solution = dir.write("plain/1_allreduce_host.cpp", kCandidate).string();
    ASSERT_EQ(run(o, memory), 0) << err.str();
    EXPECT_NE(out.str().find("dtype=bf16 (PKB's default; --dtype f32 for a float32 candidate)"),
              std::string::npos)
        << out.str();
}
