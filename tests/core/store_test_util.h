// Shared by the store tests: a scratch directory per test and a fully populated run record.
#pragma once

#include "pkbw/core/store.h"

#include <atomic>
#include <filesystem>
#include <gtest/gtest.h>
#include <string>
#include <unistd.h>

namespace pkbw::test {

// SQL that undoes schemas 8 (run_flags) and 7 (the variable-length columns), for tests that build an
// older store.
inline constexpr const char* kDropOutputLengths =
    "DROP TABLE run_flags; "
    "ALTER TABLE tensor_results DROP COLUMN length_bound; ALTER TABLE tensor_results DROP COLUMN ref_length; "
    "ALTER TABLE tensor_results DROP COLUMN cand_length; ";

class StoreTest : public ::testing::Test {
protected:
    void SetUp() override {
        static std::atomic<int> counter{0};
        const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
        dir_ = std::filesystem::temp_directory_path() / ("pkbw_store_" + std::to_string(::getpid()) + "_" +
                                                         std::to_string(counter++) + "_" + info->name());
        std::filesystem::remove_all(dir_);
    }
    void TearDown() override { std::filesystem::remove_all(dir_); }

    std::filesystem::path db_path() const { return dir_ / "nested" / "runs.db"; }

    std::filesystem::path dir_;
};

// A run with every field away from its default, so that a round trip checks every column.
inline RunRecord sample_run(int i = 0) {
    RunRecord r;
    r.problem_id = 17 + i;
    r.problem_stem = "17_gemm_allreduce";
    r.mode = RunMode::Perf;
    r.backend = "cuda";
    r.world_size = 8;
    r.dtype = "bf16";
    r.m = 4096;
    r.n = 8192;
    r.input_shapes = {{"a", {4096, 1024}}, {"b", {1024, 8192}}};
    r.atol = 0.25;
    r.rtol = 0.125;
    r.trials = 5;
    r.seed = -42;
    r.solution_path = "/data/solutions_cuda_bf16_none_anthropic_claude-opus-4-7/17_gemm_allreduce_cuda.py";
    r.solution_sha256 = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
    r.solution_kind = SolutionKind::Candidate;
    r.generation = parse_generation_label(r.solution_path);
    r.writer_host = "gpu-node-1";
    r.writer_pid = 123456;
    r.writer_start_ticks = 987654321;
    r.gpu_names = {"NVIDIA H200", "NVIDIA H200"};
    r.driver_version = "570.86.15";
    r.cuda_runtime_version = "12.8";
    r.cuda_compiled_version = "12.6";
    r.nccl_runtime_version = "2.28.9";
    r.nccl_compiled_version = "2.21.5";
    r.pkbw_version = "0.1.0-test";
    r.command_line = {"pkbw", "run", "--problem", "17", "it's \"quoted\""};
    r.started_at = "2026-07-01T12:34:56.789Z";
    r.ended_at = "2026-07-01T12:35:00.001Z";
    r.status = RunStatus::Mismatch;
    r.exit_code = 3;
    r.summary = "rank 2: output 'out' mismatches at 12 of 4096 elements";
    r.run_dir = "/tmp/pkbw/runs/1";
    return r;
}

inline void expect_same_run(const RunRecord& a, const RunRecord& b) {
    EXPECT_EQ(a.problem_id, b.problem_id);
    EXPECT_EQ(a.problem_stem, b.problem_stem);
    EXPECT_EQ(a.mode, b.mode);
    EXPECT_EQ(a.backend, b.backend);
    EXPECT_EQ(a.world_size, b.world_size);
    EXPECT_EQ(a.dtype, b.dtype);
    EXPECT_EQ(a.m, b.m);
    EXPECT_EQ(a.n, b.n);
    EXPECT_EQ(a.input_shapes, b.input_shapes);
    EXPECT_EQ(a.atol, b.atol);
    EXPECT_EQ(a.rtol, b.rtol);
    EXPECT_EQ(a.trials, b.trials);
    EXPECT_EQ(a.seed, b.seed);
    EXPECT_EQ(a.solution_path, b.solution_path);
    EXPECT_EQ(a.solution_sha256, b.solution_sha256);
    EXPECT_EQ(a.solution_kind, b.solution_kind);
    EXPECT_EQ(a.generation.label, b.generation.label);
    EXPECT_EQ(a.generation.backend, b.generation.backend);
    EXPECT_EQ(a.generation.precision, b.generation.precision);
    EXPECT_EQ(a.generation.hardware, b.generation.hardware);
    EXPECT_EQ(a.generation.provider, b.generation.provider);
    EXPECT_EQ(a.generation.model, b.generation.model);
    EXPECT_EQ(a.generation.parsed, b.generation.parsed);
    EXPECT_EQ(a.writer_host, b.writer_host);
    EXPECT_EQ(a.writer_pid, b.writer_pid);
    EXPECT_EQ(a.writer_start_ticks, b.writer_start_ticks);
    EXPECT_EQ(a.gpu_names, b.gpu_names);
    EXPECT_EQ(a.driver_version, b.driver_version);
    EXPECT_EQ(a.cuda_runtime_version, b.cuda_runtime_version);
    EXPECT_EQ(a.cuda_compiled_version, b.cuda_compiled_version);
    EXPECT_EQ(a.nccl_runtime_version, b.nccl_runtime_version);
    EXPECT_EQ(a.nccl_compiled_version, b.nccl_compiled_version);
    EXPECT_EQ(a.pkbw_version, b.pkbw_version);
    EXPECT_EQ(a.command_line, b.command_line);
    EXPECT_EQ(a.started_at, b.started_at);
    EXPECT_EQ(a.ended_at, b.ended_at);
    EXPECT_EQ(a.status, b.status);
    EXPECT_EQ(a.exit_code, b.exit_code);
    EXPECT_EQ(a.summary, b.summary);
    EXPECT_EQ(a.run_dir, b.run_dir);
}

} // namespace pkbw::test
