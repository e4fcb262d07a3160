// Flags of PKB Python solutions from their own source (engine/run/python_flags.h).
#include "pkbw/problems/registry.h"
#include "python_flags.h"

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

fs::path checkout() {
    return fs::path(PKBW_TEST_SOURCE_ROOT) / "tests/engine/pkb_checkout";
}

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
    EXPECT_EQ(lines(python_candidate_flags(source, "")),
              std::vector<std::string>{"info: calls torch.distributed all_reduce"});
}

TEST(PythonFlags, HonestSampleRaisesOnlyInfo) {
    // All-reduce by all_gather and a local sum: another collective than the problem's, a building block.
    const auto flags = python_candidate_flags(
        read(checkout() / "solutions_cuda_f32_none_samples_ci/1_allreduce_cuda.py"), "ncclAllReduce");
    EXPECT_EQ(lines(flags), std::vector<std::string>{"info: calls torch.distributed all_gather"});
}

TEST(PythonFlags, CommentsAndDocstringsAreNotCode) {
    const std::string source = "\"\"\"Unlike dist.all_reduce(x), this reads no /proc/self/maps.\"\"\"\n"
                               "# time.perf_counter = lambda: 0 would be cheating; threading.Thread too\n"
                               "def solution(x):\n    return x * 2\n";
    EXPECT_TRUE(python_candidate_flags(source, "ncclAllReduce").empty());
}

TEST(PythonFlags, NcclInTheInlineCudaSourceCounts) {
    const std::string source =
        "cuda_src = '''\nvoid run(float* x) { ncclAllGather(x, x, 1, ncclFloat, comm, s); "
        "ncclAllReduce(x, x, 1, ncclFloat, ncclSum, comm, s); }\n'''\n";
    EXPECT_EQ(lines(python_candidate_flags(source, "ncclAllReduce")),
              (std::vector<std::string>{"info: calls NCCL collective ncclAllGather",
                                        "suspect: calls NCCL collective ncclAllReduce"}));
}

TEST(PythonFlags, EscapesAndTimerTricksAreSuspect) {
    // The test checkout's misbehaving candidates: one patches the judge's Timer through sys.modules,
    // one leaves its work to a thread.
    const auto faking =
        lines(python_candidate_flags(read(checkout() / "misbehaving/1_allreduce_fakes_timing.py"), ""));
    EXPECT_NE(
        std::find(faking.begin(), faking.end(),
                  "suspect: reaches into other modules or frames (sys.modules, gc, stack frames, pkbw)"),
        faking.end());
    const auto threading =
        lines(python_candidate_flags(read(checkout() / "misbehaving/1_allreduce_background_thread.py"), ""));
    EXPECT_NE(
        std::find(
            threading.begin(), threading.end(),
            "suspect: starts host threads or processes (threading, multiprocessing, subprocess, os.fork)"),
        threading.end());
    EXPECT_EQ(lines(python_candidate_flags("import time\ntime.perf_counter = lambda: 0.0\n", "")),
              std::vector<std::string>{"suspect: replaces a timer or the profiler"});
    EXPECT_TRUE(python_candidate_flags("import time\nif time.perf_counter == 0:\n    pass\n", "").empty());
    EXPECT_EQ(lines(python_candidate_flags("torch.cuda.Event.record = lambda self, s=None: None\n", "")),
              std::vector<std::string>{"suspect: replaces a timer or the profiler"});
    EXPECT_TRUE(python_candidate_flags("record = []\nrecord.append(1)\n", "").empty()); // a name, not a timer
    EXPECT_EQ(lines(python_candidate_flags("open('/proc/self/maps').read()\n", "")),
              std::vector<std::string>{"suspect: reads /proc or /dev/shm"});
    EXPECT_EQ(lines(python_candidate_flags("from reference import solution as ref\n", "")),
              std::vector<std::string>{"suspect: imports PKB's reference"});
    EXPECT_EQ(lines(python_candidate_flags("import torch\ny = torch.matmul(a, b)\n", "")),
              std::vector<std::string>{"info: calls cuBLAS through torch (matmul, mm, linear)"});
}

// The red team's spellings of problem 1's all-reduce and of its escapes, none of which the earlier
// patterns flagged: an alias of the module or the function, an import by name or *, a process group's
// allreduce, torch's symmetric-memory all-reduce, NCCL named without a call, code built at run time,
// threads and processes by import, the environment, the judge's descriptors, timers through setattr,
// /proc built at run time, Windows line ends. The 257 solutions of .pkb raise none of these.
TEST(PythonFlags, TheRedTeamsSpellingsAreSuspect) {
    auto flagged = [](const std::string& source, const std::string& start) {
        for (const auto& line : lines(python_candidate_flags(source, "ncclAllReduce")))
            if (line.rfind(start, 0) == 0)
                return true;
        return false;
    };
    const std::string own = "suspect: calls torch.distributed all_reduce";
    EXPECT_TRUE(flagged("import torch.distributed as D\nD.all_reduce(x)\n", own));
    EXPECT_TRUE(flagged("import torch.distributed as dist\nf = dist.all_reduce\nf(x)\n", own));
    EXPECT_TRUE(flagged("from torch.distributed import all_reduce as ar\nar(x)\n", own));
    EXPECT_TRUE(flagged("from torch.distributed import *\nall_reduce(x)\n", own));
    EXPECT_TRUE(
        flagged("pg = dist.group.WORLD\npg.allreduce([x])\n", "suspect: calls torch.distributed allreduce"));
    EXPECT_TRUE(flagged("torch.ops.symm_mem.one_shot_all_reduce(x, 'sum', name)\n",
                        "suspect: calls torch.distributed one_shot_all_reduce"));
    EXPECT_TRUE(flagged("src = \"void f() { auto p = &ncclAllReduce; }\"\n",
                        "suspect: calls NCCL collective ncclAllReduce"));
    EXPECT_TRUE(flagged("getattr(dist, 'all_' + 'reduce')(x)\n", "suspect: runs code it builds at run time"));
    EXPECT_TRUE(flagged("exec(base64.b64decode(blob))\n", "suspect: runs code it builds at run time"));
    EXPECT_TRUE(
        flagged("import subprocess as sp\nsp.run(['true'])\n", "suspect: starts host threads or processes"));
    EXPECT_TRUE(flagged("from threading import Thread\nThread(target=f).start()\n",
                        "suspect: starts host threads or processes"));
    EXPECT_TRUE(flagged("import os\nos.system('true')\n", "suspect: starts host threads or processes"));
    EXPECT_TRUE(
        flagged("import os\nos.environ['NCCL_NVLS_ENABLE'] = '1'\n", "suspect: changes the environment"));
    EXPECT_TRUE(flagged("import os\nos.write(3, b'{}')\n", "suspect: signals or writes to other processes"));
    EXPECT_TRUE(flagged("import time as T\nsetattr(T, 'perf_counter', lambda: 0)\n",
                        "suspect: replaces a timer or the profiler"));
    EXPECT_TRUE(flagged("p = '/pr' + 'oc/' + str(pid)\nq = '/proc'\n", "suspect: reads /proc or /dev/shm"));
    EXPECT_TRUE(flagged("import sys\nf = sys.exc_info()[2].tb_frame.f_back.f_globals\n",
                        "suspect: reaches into other modules or frames"));
    EXPECT_TRUE(flagged("x = 1 + \\\r\n    dist.all_reduce(t)\r\n", own));
    EXPECT_TRUE(flagged("dist.reduce_scatter_tensor(o, x)\ndist.all_gather_into_tensor(y, o)\n",
                        "suspect: calls torch.distributed collectives that make an all-reduce"));
    EXPECT_TRUE(
        flagged("import sys as S\nS.modules['pkb']\n", "suspect: reaches into other modules or frames"));
    EXPECT_TRUE(flagged("setattr(T, name, f)\n", "suspect: runs code it builds at run time"));
    // Honest look-alikes stay quiet: a tensor's gather, torch.compile, a literal getattr or setattr, a
    // module's submodules.
    EXPECT_TRUE(lines(python_candidate_flags("y = torch.gather(x, 0, i)\nm = torch.compile(model)\n"
                                             "w = getattr(module, 'weight')\nsetattr(self, 'bias', b)\n"
                                             "for m in model.modules():\n    pass\n",
                                             "ncclAllReduce"))
                    .empty());
}
