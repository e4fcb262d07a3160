// The fixture of the whole-run tests (test_run*.cpp): execute_run with the host backend and the fake
// rank program (FAKE_RANK_MODE says how it behaves), a temporary folder, a memory recorder.
#pragma once

#include "recorder.h"
#include "run.h"
#include "signals.h"
#include "test_helpers.h"

#include <cstdlib>
#include <filesystem>
#include <gtest/gtest.h>
#include <sstream>
#include <string>

namespace pkbw::test {

using cli::MemoryRecorder;
using cli::Recorder;
using cli::RunOptions;
using cli::SignalScope;
namespace fs = std::filesystem;

// A candidate that returns at once: the fake rank program decides the outcome.
inline constexpr const char* kCandidate = R"(#include "pkbw/solution.h"
extern "C" int pkbw_solution(const pkbw::Context&) { return 0; }
)";

class RunTest : public ::testing::Test {
protected:
    RunOptions options(const std::string& fake_mode = "ok") {
        ::setenv("FAKE_RANK_MODE", fake_mode.c_str(), 1);
        ::setenv("FAKE_RANK_TARGET", "1", 1);
        RunOptions o;
        o.problem = "1";
        o.solution =
            dir.write("solutions_host_f32_none_samples_test/1_allreduce_host.cpp", kCandidate).string();
        o.nproc = 2;
        o.trials = 1;
        o.dtype = "f32";
        o.backend = "host";
        // Shared across tests so the reference compiles once.
        o.cache_dir = fs::temp_directory_path() / "pkbw-driver-test-cache";
        o.runs_dir = dir.path() / "runs";
        o.rank_program = PKBW_FAKE_RANK;
        o.command_line = {"pkbw", "eval", "(test)"};
        return o;
    }
    int run(const RunOptions& o, Recorder& recorder) {
        out.str("");
        err.str("");
        return cli::execute_run(o, recorder, out, err);
    }
    const MemoryRecorder::Run& only_run() {
        EXPECT_EQ(memory.runs.size(), 1u);
        return memory.runs.begin()->second;
    }
    static int count_kind(const MemoryRecorder::Run& run, const std::string& kind) {
        int n = 0;
        for (const auto& a : run.artifacts)
            n += a.kind == kind;
        return n;
    }

    pkbw::test::TempDir dir;
    SignalScope signals;
    MemoryRecorder memory;
    std::ostringstream out, err;
};

} // namespace pkbw::test
