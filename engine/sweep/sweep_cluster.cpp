#include "sweep_cluster.h"

#include "pkbw/core/error.h"
#include "pkbw/core/run_layout.h"
#include "pkbw/core/status.h"
#include "pkbw/core/store_merge.h"
#include "signals.h"
#include "subprocess.h"

#include <algorithm>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <ostream>
#include <thread>
#include <unistd.h>

namespace fs = std::filesystem;
using nlohmann::json;

namespace pkbw::cli {
namespace {

json pair_json(const SweepPair& p) {
    return {{"generation", p.generation_label},
            {"problem", p.problem_stem},
            {"problem_id", p.problem_id ? json(*p.problem_id) : json(nullptr)},
            {"solution", p.solution_path},
            {"placed_by", p.placed_by},
            {"position", p.position}};
}

SweepPair pair_from_json(const json& j) {
    SweepPair p;
    p.generation_label = j.at("generation").get<std::string>();
    p.problem_stem = j.at("problem").get<std::string>();
    if (!j.at("problem_id").is_null())
        p.problem_id = j.at("problem_id").get<int>();
    p.solution_path = j.at("solution").get<std::string>();
    p.placed_by = j.at("placed_by").get<std::string>();
    p.position = j.at("position").get<int>();
    return p;
}

json sweep_json_record(const SweepRecord& s) {
    return {{"uuid", s.uuid},
            {"name", s.name},
            {"mode", s.mode},
            {"backend", s.backend},
            {"world_size", s.world_size},
            {"options", s.options},
            {"created_at", s.created_at}};
}

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
    for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
        text.replace(at, from.size(), to);
    return text;
}

fs::path self_exe() {
    std::error_code ec;
    fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    return ec ? fs::path("pkbw") : exe;
}

std::string trimmed(std::string text) {
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' '))
        text.pop_back();
    return text;
}

} // namespace

std::string shell_quote(const std::string& word) {
    return "'" + replace_all(word, "'", "'\\''") + "'";
}

namespace {

// One submission of a sweep's pending pairs: its tag ("submit_<n>"), the task file every task reads
// (the sweep, the folders and each task's pairs) and the number of tasks.
struct Submission {
    std::string tag;
    fs::path task_file;
    int count = 0;
};

Submission write_submission(const SweepRecord& sweep, const SweepContext& context,
                            const std::vector<SweepPair>& pending, int chunk) {
    json tasks = json::array();
    for (std::size_t i = 0; i < pending.size(); i += static_cast<std::size_t>(chunk)) {
        json task = json::array();
        for (std::size_t k = i; k < std::min(pending.size(), i + static_cast<std::size_t>(chunk)); ++k)
            task.push_back(pair_json(pending[k]));
        tasks.push_back(task);
    }
    fs::create_directories(context.work_dir / "logs");
    fs::create_directories(context.work_dir / "tasks");
    int submission = 1;
    while (fs::exists(context.work_dir / ("submit_" + std::to_string(submission) + ".json")))
        ++submission;
    Submission result;
    result.tag = "submit_" + std::to_string(submission);
    result.task_file = context.work_dir / (result.tag + ".json");
    result.count = static_cast<int>(tasks.size());
    std::ofstream file(result.task_file);
    file << json{{"sweep", sweep_json_record(sweep)},
                 {"submission", submission},
                 {"work_dir", context.work_dir.string()},
                 {"cache_dir", context.cache_dir.string()},
                 {"tasks", tasks}}
                .dump(1)
         << "\n";
    if (!file)
        throw Error("cannot write " + result.task_file.string());
    return result;
}

// The command that runs task `index` (a number, or the shell word SLURM fills in).
std::string task_command_line(const SweepContext& context, const ClusterOptions& cluster,
                              const Submission& submission, const std::string& index) {
    return shell_quote(context.pkbw.string()) + " sweep --task " +
           shell_quote(submission.task_file.string()) + " --task-index " + index +
           (cluster.local_dir.empty() ? "" : " --local-dir " + shell_quote(cluster.local_dir.string()));
}

// --remote: one command per task, at most --jobs at once, then collect here.
int run_remote_tasks(Store& store, const SweepRecord& sweep, const SweepContext& context,
                     const ClusterOptions& cluster, const Submission& submission, std::ostream& out,
                     std::ostream& err) {
    const int count = submission.count;
    const std::string& tag = submission.tag;
    const int parallel = context.jobs > 0 ? context.jobs : count;
    std::mutex lock;
    int next = 0, failures = 0;
    auto worker = [&] {
        for (;;) {
            int i;
            {
                std::lock_guard<std::mutex> guard(lock);
                if (next >= count || interrupt_signal() != 0)
                    return;
                i = next++;
            }
            std::string command = cluster.remote;
            const bool has_cmd = command.find("{cmd}") != std::string::npos;
            command = replace_all(command, "{cmd}",
                                  task_command_line(context, cluster, submission, std::to_string(i)));
            command =
                replace_all(replace_all(command, "{i}", std::to_string(i)), "{n}", std::to_string(count));
            if (!has_cmd)
                command += " " + task_command_line(context, cluster, submission, std::to_string(i));
            auto result = run_process({"/bin/sh", "-c", command}, current_environment(), 7 * 24 * 3600.0);
            std::ofstream(context.work_dir / "logs" / (tag + "_task_" + std::to_string(i) + ".out"))
                << result.output;
            std::lock_guard<std::mutex> guard(lock);
            if (!result.ok()) {
                ++failures;
                err << "pkbw: sweep task " << i << " (" << command << ") ended with "
                    << (result.signal ? "signal " + std::to_string(result.signal)
                                      : "exit " + std::to_string(result.exit_code))
                    << "\n";
            }
        }
    };
    std::vector<std::thread> threads;
    for (int t = 0; t < std::min(parallel, count); ++t)
        threads.emplace_back(worker);
    for (auto& t : threads)
        t.join();
    out << "sweep " << sweep.id << ": " << count << " remote tasks ran (" << failures
        << " failed); collecting\n";
    collect_sweep(store, sweep, context, out, err);
    return interrupt_signal() != 0 ? status::kExitInterrupted : status::kExitOk;
}

// SLURM: an array job, one task per chunk, throttled with %K; then the collecting job.
int submit_slurm(Store& store, const SweepRecord& sweep, const SweepContext& context,
                 const ClusterOptions& cluster, const Submission& submission, std::size_t pairs,
                 std::ostream& out, std::ostream& err) {
    const int count = submission.count;
    const std::string& tag = submission.tag;
    const fs::path script = context.work_dir / (tag + ".sbatch");
    {
        std::ofstream file(script);
        file << "#!/bin/bash\n"
             << "#SBATCH --job-name=pkbw-sweep-" << sweep.id << "\n"
             << "#SBATCH --array=0-" << (count - 1)
             << (cluster.array_throttle > 0 ? "%" + std::to_string(cluster.array_throttle) : "") << "\n"
             << "#SBATCH --output=" << (context.work_dir / "logs").string() << "/" << tag << "_task_%a.out\n";
        if (!cluster.partition.empty())
            file << "#SBATCH --partition=" << cluster.partition << "\n";
        if (!cluster.account.empty())
            file << "#SBATCH --account=" << cluster.account << "\n";
        if (!cluster.gres.empty())
            file << "#SBATCH --gres=" << cluster.gres << "\n";
        if (!cluster.time_limit.empty())
            file << "#SBATCH --time=" << cluster.time_limit << "\n";
        file << "# Written by pkbw sweep " << sweep.id
             << " (docs/sweeps.md). Each task runs its pairs into a store\n"
             << "# on the node's local disk and publishes it under " << (context.work_dir / "tasks").string()
             << ".\n"
             << "exec " << task_command_line(context, cluster, submission, "\"$SLURM_ARRAY_TASK_ID\"")
             << "\n";
    }
    std::vector<std::string> common;
    if (!cluster.partition.empty())
        common.push_back("--partition=" + cluster.partition);
    if (!cluster.account.empty())
        common.push_back("--account=" + cluster.account);
    std::vector<std::string> submit = {cluster.sbatch, "--parsable", script.string()};
    auto result = run_process(submit, current_environment(), 120);
    if (!result.ok()) {
        // Nothing was queued: the sweep is not running anywhere, its pairs are left to resume.
        set_sweep_status(store, sweep.id, sweep_status::kIncomplete);
        err << "pkbw: " << cluster.sbatch << " " << script.string() << " failed: " << trimmed(result.output)
            << "\n  nothing was submitted; sweep " << sweep.id << " is incomplete (pkbw sweep --resume "
            << sweep.id << " --slurm, with the same cluster options, submits its pairs again)\n";
        return status::kExitEnvironment;
    }
    const std::string array_job = trimmed(result.output).substr(0, trimmed(result.output).find(';'));
    const std::string collect = shell_quote(context.pkbw.string()) + " sweep --collect " +
                                std::to_string(sweep.id) + " --store " +
                                shell_quote(context.store_path.string());
    std::vector<std::string> dependent = {cluster.sbatch, "--parsable", "--dependency=afterany:" + array_job,
                                          "--job-name=pkbw-sweep-" + std::to_string(sweep.id) + "-collect",
                                          "--output=" +
                                              (context.work_dir / "logs" / (tag + "_collect.out")).string()};
    dependent.insert(dependent.end(), common.begin(), common.end());
    if (cluster.wait)
        dependent.push_back("--wait");
    dependent.push_back("--wrap=" + collect);
    set_sweep_status(store, sweep.id, sweep_status::kSubmitted);
    out << "sweep " << sweep.id << ": " << count << " tasks (" << pairs << " pairs) submitted as job "
        << array_job << "; collecting job after it" << (cluster.wait ? " (waiting)" : "") << "\n"
        << std::flush;
    auto collected = run_process(dependent, current_environment(), cluster.wait ? 7 * 24 * 3600.0 : 120);
    if (!collected.ok()) {
        err << "pkbw: the collecting job (" << cluster.sbatch << " --dependency=afterany:" << array_job
            << ") failed: " << trimmed(collected.output) << "\n  collect by hand: " << collect << "\n";
        return status::kExitEnvironment;
    }
    out << "collecting job " << trimmed(collected.output) << (cluster.wait ? " finished" : " queued") << "\n";
    return 0;
}

} // namespace

int submit_sweep(Store& store, const SweepRecord& sweep, const SweepContext& context,
                 const ClusterOptions& cluster, std::ostream& out, std::ostream& err) {
    const auto pending = pending_pairs(store, sweep.id);
    if (pending.empty()) {
        out << "sweep " << sweep.id << ": every pair is judged; nothing to submit\n";
        return 0;
    }
    const Submission submission = write_submission(sweep, context, pending, std::max(1, cluster.chunk));
    if (!cluster.slurm)
        return run_remote_tasks(store, sweep, context, cluster, submission, out, err);
    return submit_slurm(store, sweep, context, cluster, submission, pending.size(), out, err);
}

int run_sweep_task(const fs::path& task_file, int index, const ClusterOptions& cluster, bool json_output,
                   std::ostream& out, std::ostream& err) {
    std::ifstream in(task_file);
    json plan = json::parse(in, nullptr, false);
    if (plan.is_discarded() || !plan.contains("tasks"))
        throw Error("sweep task file " + task_file.string() + ": not a pkbw sweep submission");
    const json& tasks = plan.at("tasks");
    if (index < 0 || index >= static_cast<int>(tasks.size()))
        throw Error("sweep task file " + task_file.string() + ": no task " + std::to_string(index) +
                    " (it has " + std::to_string(tasks.size()) + ")");
    const json& s = plan.at("sweep");
    SweepRecord sweep;
    sweep.uuid = s.at("uuid").get<std::string>();
    sweep.name = s.value("name", "");
    sweep.mode = s.at("mode").get<std::string>();
    sweep.backend = s.value("backend", "");
    sweep.world_size = s.at("world_size").get<int>();
    sweep.options = s.value("options", json::object());
    sweep.created_at = s.value("created_at", "");
    std::vector<SweepPair> pairs;
    for (const auto& p : tasks.at(static_cast<std::size_t>(index)))
        pairs.push_back(pair_from_json(p));
    const std::string name =
        "submit_" + std::to_string(plan.value("submission", 1)) + "_task_" + std::to_string(index);
    fs::path local_root = cluster.local_dir;
    if (local_root.empty())
        local_root = std::getenv("TMPDIR") && *std::getenv("TMPDIR") ? fs::path(std::getenv("TMPDIR"))
                                                                     : fs::path("/tmp");
    const fs::path local =
        local_root / ("pkbw-sweep-" + sweep.uuid.substr(0, 8) + "-" + name + "-" + std::to_string(getpid()));
    fs::create_directories(local);
    SweepContext context;
    context.store_path = local / "store.db";
    context.cache_dir = plan.value("cache_dir", std::string());
    context.pkbw = self_exe();
    context.work_dir = local / "work";
    context.json = json_output;
    ExecuteResult result;
    {
        Store store = Store::open(context.store_path);
        const std::int64_t id = create_sweep(store, sweep, pairs);
        sweep.id = id;
        result = execute_sweep(store, sweep, context, out);
        set_sweep_status(store, id, result.interrupted ? sweep_status::kInterrupted : sweep_status::kDone);
    }
    // Publish: the closed store (its WAL checkpointed by the last close) and its run folders, under a
    // temporary name renamed when complete, so `collect` never reads half a task.
    const fs::path tasks_dir = fs::path(plan.at("work_dir").get<std::string>()) / "tasks";
    const fs::path staging = tasks_dir / (".staging-" + name + "-" + std::to_string(getpid()));
    const fs::path published = tasks_dir / (name + "-" + std::to_string(getpid()));
    std::error_code ec;
    fs::create_directories(staging, ec);
    for (const char* file : {"store.db", "store.db-wal"})
        if (fs::exists(local / file, ec))
            fs::copy_file(local / file, staging / file, fs::copy_options::overwrite_existing, ec);
    if (!ec && fs::exists(local / run_layout::kRunsDir, ec))
        fs::copy(local / run_layout::kRunsDir, staging / run_layout::kRunsDir, fs::copy_options::recursive,
                 ec);
    if (ec) {
        err << "pkbw: sweep task " << index << ": cannot publish its store to " << staging.string() << ": "
            << ec.message() << " (kept in " << local.string() << ")\n";
        return status::kExitEnvironment;
    }
    fs::rename(staging, published, ec);
    if (ec) {
        err << "pkbw: sweep task " << index << ": cannot rename " << staging.string() << ": " << ec.message()
            << "\n";
        return status::kExitEnvironment;
    }
    fs::remove_all(local, ec);
    out << (json_output
                ? json{{"event", "task_published"}, {"task", index}, {"path", published.string()}}.dump()
                : "sweep task " + std::to_string(index) + ": " + std::to_string(result.finished) +
                      " pairs, published " + published.string())
        << "\n";
    return result.interrupted ? status::kExitInterrupted : status::kExitOk;
}

int collect_sweep(Store& store, const SweepRecord& sweep, const SweepContext& context, std::ostream& out,
                  std::ostream& err) {
    const fs::path tasks_dir = context.work_dir / "tasks";
    const fs::path collected_dir = context.work_dir / "collected";
    std::error_code ec;
    std::vector<fs::path> published;
    if (fs::is_directory(tasks_dir, ec))
        for (const auto& entry : fs::directory_iterator(tasks_dir, ec))
            if (entry.is_directory() && !entry.path().filename().string().starts_with(".") &&
                fs::exists(entry.path() / "store.db"))
                published.push_back(entry.path());
    std::sort(published.begin(), published.end());
    fs::create_directories(collected_dir, ec);
    int failed = 0, runs = 0;
    for (const auto& task : published) {
        try {
            MergeReport report = merge_stores({task / "store.db"}, store.path());
            runs += report.runs;
            for (const auto& w : report.warnings)
                err << "pkbw: " << w << "\n";
            fs::rename(task, collected_dir / task.filename(), ec);
        } catch (const StoreError& error) {
            ++failed;
            err << "pkbw: collecting " << task.string() << ": " << error.what() << "\n";
        }
    }
    const auto pending = pending_pairs(store, sweep.id);
    set_sweep_status(store, sweep.id, pending.empty() ? sweep_status::kDone : sweep_status::kIncomplete);
    out << "sweep " << sweep.id << ": collected " << published.size() - failed << " task stores (" << runs
        << " runs); " << pending.size() << " pairs still pending"
        << (pending.empty() ? "" : " (resume: pkbw sweep --resume " + std::to_string(sweep.id) + " ...)")
        << "\n";
    return failed;
}

} // namespace pkbw::cli
