// Sweeps beyond this machine (docs/sweeps.md "SLURM" and "Other queues"): the pending pairs are cut
// into tasks; each task runs its pairs into a store of its own on the node's local disk and publishes
// it (store and run folders) into the sweep's folder when it ends; `collect` merges the published
// task stores into the sweep's store (pkbw store merge).
#pragma once

#include "sweep_exec.h"

#include <filesystem>
#include <iosfwd>
#include <string>

namespace pkbw::cli {

struct ClusterOptions {
    bool slurm = false;
    std::string remote; // command template: {i} task index, {n} task count, {cmd} the task's pkbw command
    std::string partition, gres, account, time_limit;
    int array_throttle = 0; // %K: at most K tasks at once
    int chunk = 1;          // pairs per task
    std::string sbatch = "sbatch";
    bool wait = false;               // sbatch --wait on the collecting job
    std::filesystem::path local_dir; // tasks' store root on the node (default $TMPDIR, else /tmp)
};

// Submits the pending pairs of `sweep` (one array job and a dependent collecting job, or the
// --remote commands followed by an in-process collect). Returns the exit code.
int submit_sweep(Store& store, const SweepRecord& sweep, const SweepContext& context,
                 const ClusterOptions& cluster, std::ostream& out, std::ostream& err);

// One task of a submission (run on the node): `task_file` is the submission's JSON.
int run_sweep_task(const std::filesystem::path& task_file, int index, const ClusterOptions& cluster,
                   bool json, std::ostream& out, std::ostream& err);

// Merges every published task store of the sweep into `store`; returns the number that failed.
int collect_sweep(Store& store, const SweepRecord& sweep, const SweepContext& context, std::ostream& out,
                  std::ostream& err);

// "a b" -> 'a b' for /bin/sh.
std::string shell_quote(const std::string& word);

} // namespace pkbw::cli
