#include "sweep_exec.h"

#include "compile_cache.h"
#include "locate.h"
#include "pkbw/core/error.h"
#include "pkbw/core/status.h"
#include "pkbw/core/store.h"
#include "pkbw/problems/registry.h"
#include "signals.h"
#include "sweep_progress.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <ostream>
#include <regex>
#include <set>
#include <spawn.h>
#include <sstream>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

extern char** environ;

namespace fs = std::filesystem;
using nlohmann::json;

namespace pkbw::cli {
namespace {

using Clock = std::chrono::steady_clock;

struct Child {
    pid_t pid = -1;
    SweepPair pair;
    std::size_t slot = 0;
    fs::path stdout_file, stderr_file;
    Clock::time_point started;
};

// posix_spawn with stdout/stderr to files and one environment variable replaced.
pid_t spawn(const std::vector<std::string>& argv, const fs::path& out, const fs::path& err,
            const std::map<std::string, std::string>& set) {
    std::vector<std::string> environment;
    for (char** e = environ; *e != nullptr; ++e) {
        std::string entry = *e;
        const std::string name = entry.substr(0, entry.find('='));
        if (!set.count(name))
            environment.push_back(entry);
    }
    for (const auto& [name, value] : set)
        environment.push_back(name + "=" + value);
    std::vector<char*> args, envp;
    for (const auto& a : argv)
        args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    for (const auto& e : environment)
        envp.push_back(const_cast<char*>(e.c_str()));
    envp.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    pid_t pid = -1;
    const int rc = posix_spawn(&pid, args[0], &actions, nullptr, args.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0)
        throw Error("cannot start " + argv[0] + ": " + std::strerror(rc));
    return pid;
}

// A perf run's pkbw speedup with its interval and verdict ("1.234x [1.1, 1.4] faster"), from its
// run_finished; "" for a run that was not timed.
std::string speedup_text(const json& finished) {
    const auto perf = finished.find("perf");
    if (perf == finished.end() || !perf->is_object() || !perf->contains("pkbw") ||
        !(*perf)["pkbw"].is_object())
        return {};
    const json& pkbw = (*perf)["pkbw"];
    if (!pkbw.contains("speedup") || !pkbw["speedup"].is_number())
        return {};
    // A run whose speedup is no result (invalid_timing, ...) says so, not its figures (docs/cli.md).
    if (perf->contains("withheld") && (*perf)["withheld"].is_string())
        return "withheld: " + (*perf)["withheld"].get<std::string>();
    auto number = [&pkbw](const char* key) {
        return pkbw.contains(key) && pkbw[key].is_number() ? pkbw[key].get<double>() : 0.0;
    };
    const std::string verdict =
        pkbw.contains("verdict") && pkbw["verdict"].is_string() ? pkbw["verdict"].get<std::string>() : "";
    char text[160];
    std::snprintf(text, sizeof text, "%.3fx [%.3g, %.3g] %s", number("speedup"), number("ci_low"),
                  number("ci_high"), verdict.c_str());
    return text;
}

// The child's verdict: its last `run_finished` line.
std::optional<json> run_finished(const fs::path& stdout_file) {
    std::ifstream in(stdout_file);
    std::string line;
    std::optional<json> last;
    while (std::getline(in, line)) {
        if (line.find("\"run_finished\"") == std::string::npos)
            continue;
        json event = json::parse(line, nullptr, false);
        if (!event.is_discarded() && event.value("event", "") == "run_finished")
            last = event;
    }
    return last;
}

std::string tail_of(const fs::path& file, std::size_t bytes) {
    std::ifstream in(file, std::ios::binary);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (text.size() > bytes)
        text = text.substr(text.size() - bytes);
    while (!text.empty() && (text.back() == '\n' || text.back() == ' '))
        text.pop_back();
    std::replace(text.begin(), text.end(), '\n', ' ');
    return text;
}

// Compiles the candidates (and references) of upcoming pairs into the compile cache while the
// runs of earlier pairs hold the GPUs: the child pkbw then finds its libraries cached. Best effort:
// a failure here is compiled again, and recorded, by the run itself.
class CompilePrefetch {
public:
    CompilePrefetch(const SweepRecord& sweep, const SweepContext& context, std::vector<SweepPair> pairs)
        : pairs_(std::move(pairs)) {
        const std::string backend = sweep.backend;
        if (!context.prefetch_compiles || (backend != "cuda" && backend != "host"))
            return;
        try {
            layout_ = locate_data();
        } catch (const Error&) {
            return;
        }
        arch_ = sweep.options.value("arch", std::string("sm_90"));
        // nvcc is single-threaded and a sweep's compiles dwarf its runs: half the cores compile ahead.
        const unsigned workers = std::max(1u, std::thread::hardware_concurrency() / 2);
        for (unsigned i = 0; i < workers; ++i)
            threads_.emplace_back(
                [this, backend, cache_dir = context.cache_dir] { work(backend, cache_dir); });
    }
    ~CompilePrefetch() {
        stop_ = true;
        for (auto& t : threads_)
            t.join();
    }
    // Pairs before this index have started: not worth compiling ahead any more.
    void started_up_to(std::size_t index) { started_ = index; }

private:
    void work(const std::string& backend, const fs::path& cache_dir) {
        CompileCache cache(cache_dir);
        for (;;) {
            const std::size_t i = next_++;
            if (i >= pairs_.size() || stop_ || interrupt_signal() != 0)
                return;
            if (i < started_)
                continue;
            CompileRequest request;
            request.backend = backend == "cuda" ? Backend::Cuda : Backend::Host;
            request.arch = arch_;
            request.include_dirs = layout_->include_dirs;
            request.abi_headers = layout_->abi_headers;
            request.source = pairs_[i].solution_path;
            cache.compile(request);
            const Problem* problem = find_problem(pairs_[i].problem_stem);
            bool first = false;
            {
                std::lock_guard<std::mutex> guard(lock_);
                first = references_.insert(pairs_[i].problem_stem).second;
            }
            if (problem && first && !stop_) {
                request.source = layout_->problem_dir(problem_folder(*problem)) /
                                 (backend == "cuda" ? "reference.cu" : "reference_host.cpp");
                cache.compile(request);
            }
        }
    }

    std::vector<SweepPair> pairs_;
    std::optional<DataLayout> layout_;
    std::string arch_;
    std::atomic<bool> stop_{false};
    std::atomic<std::size_t> started_{0}, next_{0};
    std::mutex lock_;
    std::set<std::string> references_; // problems whose reference is compiled (or being)
    std::vector<std::thread> threads_;
};

} // namespace

std::vector<std::string> visible_gpus() {
    std::vector<std::string> ids;
    if (const char* listed = std::getenv("CUDA_VISIBLE_DEVICES")) {
        std::string text = listed, id;
        std::stringstream in(text);
        while (std::getline(in, id, ','))
            if (!id.empty())
                ids.push_back(id);
        return ids;
    }
    std::error_code ec;
    for (int i = 0; fs::exists("/dev/nvidia" + std::to_string(i), ec); ++i)
        ids.push_back(std::to_string(i));
    return ids;
}

bool sweep_times(const std::string& mode, const std::vector<std::string>& run_args) {
    return mode == "perf" || std::find(run_args.begin(), run_args.end(), "--perf") != run_args.end();
}

bool sweep_times(const SweepRecord& sweep) {
    std::vector<std::string> args;
    for (const auto& arg : sweep.options.value("run_args", json::array()))
        if (arg.is_string())
            args.push_back(arg.get<std::string>());
    return sweep_times(sweep.mode, args);
}

std::vector<std::vector<std::string>> run_slots(const SweepRecord& sweep, const SweepContext& context) {
    const int w = std::max(1, sweep.world_size);
    std::vector<std::vector<std::string>> slots;
    const bool gpu = sweep.backend == "cuda" || (sweep.backend == "pkb-python" && !visible_gpus().empty());
    if (gpu) {
        const auto gpus = visible_gpus();
        if (static_cast<int>(gpus.size()) < w)
            throw Error("sweep: a run needs " + std::to_string(w) + " GPUs and " +
                        std::to_string(gpus.size()) + " are visible (CUDA_VISIBLE_DEVICES / /dev/nvidia*)");
        int count = static_cast<int>(gpus.size()) / w;
        if (sweep_times(sweep) && !context.perf_concurrent)
            count = 1; // timing owns the node: no other run on its GPUs, NVLink or NVSwitch (also for
                       // an eval sweep whose every run times: -- --perf)
        const int sharing = sweep_times(sweep) ? 1 : std::max(1, context.runs_per_gpu);
        for (int round = 0; round < sharing; ++round)
            for (int s = 0; s < count; ++s)
                slots.emplace_back(gpus.begin() + s * w, gpus.begin() + (s + 1) * w);
        if (context.jobs > 0 && static_cast<int>(slots.size()) > context.jobs)
            slots.resize(static_cast<std::size_t>(context.jobs));
        return slots;
    }
    int count = context.jobs > 0 ? context.jobs
                                 : std::max(1, static_cast<int>(std::thread::hardware_concurrency()) / w);
    slots.resize(static_cast<std::size_t>(count));
    return slots;
}

std::vector<std::string> pair_command(const SweepRecord& sweep, const SweepPair& pair,
                                      const SweepContext& context) {
    std::vector<std::string> argv = {context.pkbw.string(), sweep.mode, "--problem", pair.problem_stem,
                                     "--solution", pair.solution_path, "--nproc",
                                     std::to_string(sweep.world_size), "--store", context.store_path.string(),
                                     "--cache-dir", context.cache_dir.string(), "--json",
                                     // The sweep's plan placed this file (by its name rules or --place):
                                     // the child run must not refuse it for naming another problem.
                                     "--ignore-name"};
    if (sweep.backend == "cuda" || sweep.backend == "host") {
        argv.push_back("--backend");
        argv.push_back(sweep.backend);
    }
    if (auto checkout = sweep.options.value("pkb_checkout", std::string()); !checkout.empty()) {
        argv.push_back("--pkb-checkout");
        argv.push_back(checkout);
        if (auto python = sweep.options.value("python", std::string()); !python.empty()) {
            argv.push_back("--python");
            argv.push_back(python);
        }
        if (auto backend = sweep.options.value("run_backend", std::string()); !backend.empty()) {
            argv.push_back("--backend");
            argv.push_back(backend);
        }
    }
    for (const auto& arg : sweep.options.value("run_args", json::array()))
        argv.push_back(arg.get<std::string>());
    return argv;
}

std::vector<SweepPair> pending_pairs(const Store& store, std::int64_t sweep_id) {
    std::vector<SweepPair> pending;
    for (auto& pair : sweep_pairs(store, sweep_id)) {
        if (pair.state == pair_state::kDone && pair.run_id) {
            auto run = store.get_run(*pair.run_id);
            if (run && sweep_run_status_is_final(run->status))
                continue;
        }
        pending.push_back(std::move(pair));
    }
    return pending;
}

namespace {

// The environment of a run on one slot: its devices, when the sweep pins them.
std::map<std::string, std::string> slot_environment(const std::vector<std::string>& devices) {
    std::map<std::string, std::string> environment;
    if (!devices.empty()) {
        std::string list;
        for (const auto& id : devices)
            list += (list.empty() ? "" : ",") + id;
        environment["CUDA_VISIBLE_DEVICES"] = list;
    }
    return environment;
}

// What a child that exited with `status` did for its pair: the run it recorded (its verdict, and pending
// again when the run was interrupted or aborted), or why it recorded none.
struct ChildOutcome {
    SweepPair pair;
    std::string verdict = "failed", speedup;
};

ChildOutcome finished_pair(const Child& child, int status) {
    ChildOutcome out;
    out.pair = child.pair;
    auto finished = run_finished(child.stdout_file);
    const std::int64_t run_id = finished ? finished->value("run_id", std::int64_t{0}) : 0;
    if (run_id > 0) {
        out.pair.run_id = run_id;
        out.verdict = finished->value("status", std::string(status::kError));
        out.pair.message = finished->value("message", std::string());
        out.pair.state =
            out.verdict == to_string(RunStatus::Interrupted) || out.verdict == to_string(RunStatus::Aborted)
                ? pair_state::kPending
                : pair_state::kDone;
        out.speedup = speedup_text(*finished);
    } else {
        out.pair.state = pair_state::kFailed;
        std::string how = WIFSIGNALED(status)
                              ? "pkbw was killed by signal " + std::to_string(WTERMSIG(status))
                              : "pkbw exited " + std::to_string(WEXITSTATUS(status));
        out.pair.message = how + " without recording a run";
        if (finished)
            out.pair.message += ": " + finished->value("message", std::string());
        else if (auto tail = tail_of(child.stderr_file, 300); !tail.empty())
            out.pair.message += ": " + tail;
    }
    return out;
}

} // namespace

ExecuteResult execute_sweep(Store& store, const SweepRecord& sweep, const SweepContext& context,
                            std::ostream& out) {
    const std::vector<SweepPair> todo = pending_pairs(store, sweep.id);
    const auto slots = run_slots(sweep, context);
    const std::size_t total_pairs = sweep_pairs(store, sweep.id).size();
    SweepProgress progress(out, context.json, context.terminal, total_pairs, total_pairs - todo.size(),
                           slots.size());
    fs::create_directories(context.work_dir / "logs");
    CompilePrefetch prefetch(sweep, context, todo);
    std::vector<bool> busy(slots.size(), false);
    std::vector<Child> running;
    std::size_t next = 0;
    ExecuteResult result;
    bool forwarded = false;
    while (next < todo.size() || !running.empty()) {
        const bool stopping = interrupt_signal() != 0;
        if (stopping && !forwarded) {
            // A terminal's Ctrl-C reaches the children too; SIGTERM (scancel, kill) is forwarded.
            for (const auto& c : running)
                ::kill(c.pid, interrupt_signal());
            forwarded = true;
            result.interrupted = true;
        }
        for (std::size_t s = 0; !stopping && s < slots.size() && next < todo.size(); ++s) {
            if (busy[s])
                continue;
            Child c;
            c.pair = todo[next];
            c.slot = s;
            const std::string tag = std::to_string(c.pair.position);
            c.stdout_file = context.work_dir / "logs" / ("pair_" + tag + ".jsonl");
            c.stderr_file = context.work_dir / "logs" / ("pair_" + tag + ".err");
            const std::map<std::string, std::string> environment = slot_environment(slots[s]);
            c.started = Clock::now();
            try {
                c.pid =
                    spawn(pair_command(sweep, c.pair, context), c.stdout_file, c.stderr_file, environment);
            } catch (const Error& error) {
                SweepPair failed = c.pair;
                failed.state = pair_state::kFailed;
                failed.message = error.what();
                record_sweep_pair(store, sweep.id, failed);
                progress.finished(failed, "failed", 0);
                ++next;
                continue;
            }
            busy[s] = true;
            progress.started(c.pair);
            running.push_back(std::move(c));
            prefetch.started_up_to(++next);
        }
        for (auto it = running.begin(); it != running.end();) {
            int status = 0;
            pid_t done = ::waitpid(it->pid, &status, WNOHANG);
            if (done == 0 || (done < 0 && errno == EINTR)) {
                ++it;
                continue;
            }
            const double seconds = std::chrono::duration<double>(Clock::now() - it->started).count();
            auto [pair, verdict, speedup] = finished_pair(*it, status);
            pair.seconds = seconds;
            record_sweep_pair(store, sweep.id, pair);
            progress.finished(pair, verdict, seconds, speedup);
            ++result.finished;
            busy[it->slot] = false;
            it = running.erase(it);
        }
        if (stopping && next < todo.size() && running.empty())
            break;
        std::this_thread::sleep_for(std::chrono::milliseconds(running.empty() ? 0 : 50));
    }
    progress.close();
    return result;
}

} // namespace pkbw::cli
