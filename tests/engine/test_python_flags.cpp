// Flags of PKB Python solutions from their own source (engine/run/python_flags.h).
#include "python_flags.h"

#include "pkbw/problems/registry.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <sstream>

namespace fs = std::filesystem;
using pkbw::cli::Flag;
using pkbw::cli::python_candidate_flags;

namespace {

std::string read(const fs::path& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

fs::path checkout() { return fs::path(PKBW_TEST_SOURCE_ROOT) / "tests/engine/pkb_checkout"; }

// "severity: text" of each flag, in order.
std::vector<std::string> lines(const std::vector<Flag>& flags) {
    std::vector<std::string> out;
    for (const auto& flag : flags) {
        out.push_back(flag.severity + ": " + flag.text);
    }
    return out;
}

} // namespace

TEST(PythonFlags, TheProblemsOwnCollectiveIsSuspectOnlyWhereItIsTheWholeProblem) {
    const pkbw::ProblemConfig config{2, 64, 64, pkbw::DType::F32, 0, 0, pkbw::InputMode::Pkb};
    const auto* allreduce = pkbw::find_problem("1_allreduce");
    const auto* layernorm = pkbw::find_problem("9_layernorm_backward");
    ASSERT_NE(allreduce, nullptr);
    ASSERT_NE(layernorm, nullptr);
    EXPECT_EQ(pkbw::cli::own_collective_symbol(*allreduce, config), "ncclAllReduce");
    // Its all-reduce carries the gradients around the candidate's own kernels: a building block.
    EXPECT_EQ(pkbw::cli::own_collective_symbol(*layernorm, config), "");

    const std::string source = "import torch.distributed as dist\n"
                               "def solution(x):\n    y = x.clone()\n    dist.all_reduce(y)\n    return y\n";
    EXPECT_EQ(lines(python_candidate_flags(source, "ncclAllReduce")),
              std::vector<std::string>{"suspect: calls torch.distributed all_reduce"});
    EXPECT_EQ(lines(python_candidate_flags(source, "")), std::vector<std::string>{"info: calls torch.distributed all_reduce"});
}

TEST(PythonFlags, HonestSampleRaisesOnlyInfo) {
    // All-reduce by all_gather and a local sum: another collective than the problem's, a building block.
    const auto flags = python_candidate_flags(read(checkout() / "solutions_cuda_f32_none_samples_ci/1_allreduce_cuda.py"),
                                              "ncclAllReduce");
    EXPECT_EQ(lines(flags), std::vector<std::string>{"info: calls torch.distributed all_gather"});
}

TEST(PythonFlags, CommentsAndDocstringsAreNotCode) {
    const std::string source = "\"\"\"Unlike dist.all_reduce(x), this reads no /proc/self/maps.\"\"\"\n"
                               "# time.perf_counter = lambda: 0 would be cheating; threading.Thread too\n"
                               "def solution(x):\n    return x * 2\n";
    EXPECT_TRUE(python_candidate_flags(source, "ncclAllReduce").empty());
}

TEST(PythonFlags, NcclInTheInlineCudaSourceCounts) {
    const std::string source = "cuda_src = '''\nvoid run(float* x) { ncclAllGather(x, x, 1, ncclFloat, comm, s); "
                               "ncclAllReduce(x, x, 1, ncclFloat, ncclSum, comm, s); }\n'''\n";
    EXPECT_EQ(lines(python_candidate_flags(source, "ncclAllReduce")),
              (std::vector<std::string>{"info: calls NCCL collective ncclAllGather",
                                        "suspect: calls NCCL collective ncclAllReduce"}));
}

TEST(PythonFlags, EscapesAndTimerTricksAreSuspect) {
    // The test checkout's misbehaving candidates: one patches the judge's Timer through sys.modules,
    // one leaves its work to a thread.
    const auto faking = lines(python_candidate_flags(read(checkout() / "misbehaving/1_allreduce_fakes_timing.py"), ""));
    EXPECT_NE(std::find(faking.begin(), faking.end(),
                        "suspect: reaches into other modules or frames (sys.modules, gc, stack frames)"),
              faking.end());
    const auto threading =
        lines(python_candidate_flags(read(checkout() / "misbehaving/1_allreduce_background_thread.py"), ""));
    EXPECT_NE(std::find(threading.begin(), threading.end(),
                        "suspect: starts host threads or processes (threading, multiprocessing, fork)"),
              threading.end());
    EXPECT_EQ(lines(python_candidate_flags("import time\ntime.perf_counter = lambda: 0.0\n", "")),
              std::vector<std::string>{"suspect: replaces a timer"});
    EXPECT_TRUE(python_candidate_flags("import time\nif time.perf_counter == 0:\n    pass\n", "").empty());
    EXPECT_EQ(lines(python_candidate_flags("torch.cuda.Event.record = lambda self, s=None: None\n", "")),
              std::vector<std::string>{"suspect: replaces a timer"});
    EXPECT_TRUE(python_candidate_flags("record = []\nrecord.append(1)\n", "").empty()); // a name, not a timer
    EXPECT_EQ(lines(python_candidate_flags("open('/proc/self/maps').read()\n", "")),
              std::vector<std::string>{"suspect: reads /proc/self/maps or /proc/self/mem"});
    EXPECT_EQ(lines(python_candidate_flags("from reference import solution as ref\n", "")),
              std::vector<std::string>{"suspect: imports PKB's reference"});
    EXPECT_EQ(lines(python_candidate_flags("import torch\ny = torch.matmul(a, b)\n", "")),
              std::vector<std::string>{"info: calls cuBLAS through torch (matmul, mm, linear)"});
}
