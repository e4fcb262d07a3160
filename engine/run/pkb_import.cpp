#include "pkb_import.h"

#include "pkbw/core/error.h"
#include "pkbw/core/generation.h"
#include "pkbw/core/kineto.h"
#include "pkbw/core/pkb_logs.h"
#include "pkbw/core/status.h"
#include "pkbw/core/store.h"
#include "pkbw/core/trace_store.h"

#include <cmath>
#include <ctime>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <sys/stat.h>

namespace pkbw {
namespace fs = std::filesystem;
namespace {

// The newest modification time among the run's files, as the store's ISO-8601 UTC text, so that
// imported runs sort by when PKB produced them rather than when they were imported.
std::string newest_mtime(const PkbRun& run) {
    std::time_t newest = 0;
    long newest_ns = 0;
    auto consider = [&](const fs::path& p) {
        struct stat st {};
        if (!p.empty() && ::stat(p.c_str(), &st) == 0 &&
            (st.st_mtim.tv_sec > newest || (st.st_mtim.tv_sec == newest && st.st_mtim.tv_nsec > newest_ns))) {
            newest = st.st_mtim.tv_sec;
            newest_ns = st.st_mtim.tv_nsec;
        }
    };
    for (const auto& t : run.trials) {
        for (const auto* job :
             {t.reference ? &*t.reference : nullptr, t.candidate ? &*t.candidate : nullptr}) {
            for (const auto& f : job ? job->ranks : std::vector<PkbRankFiles>{}) {
                consider(f.pt);
                if (f.perf) {
                    consider(*f.perf);
                }
            }
        }
    }
    if (newest == 0) {
        return "";
    }
    std::tm tm{};
    ::gmtime_r(&newest, &tm);
    char text[64];
    std::snprintf(text, sizeof text, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ", tm.tm_year + 1900, tm.tm_mon + 1,
                  tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                  static_cast<long>(newest_ns / 1000000) % 1000);
    return text;
}

// A generation label only when the folder sits under a solutions_<...> folder (PKB's logs do not
// record which solutions folder produced them).
GenerationLabel generation_of(const fs::path& dir) {
    for (const auto& part : fs::absolute(dir)) {
        if (part.string().starts_with("solutions_")) {
            return parse_generation_label(fs::absolute(dir).string());
        }
    }
    return {};
}

// Kinds as native runs name them (outputs_reference / outputs_candidate), so that the heatmaps and
// the tolerance explorer find PKB's .pt files the way they find pkbw's safetensors.
void add_artifacts(Store& store, std::int64_t run_id, int trial, const PkbJob& job, Side side) {
    const std::string suffix = side == Side::Reference ? "_reference" : "_candidate";
    for (const auto& f : job.ranks) {
        auto add = [&](const std::string& kind, const fs::path& path) {
            store.add_artifact({0, run_id, trial, f.rank, kind, path.string()});
        };
        if (!f.pt.empty()) {
            add("outputs" + suffix, f.pt);
        }
        if (f.perf) {
            add("perf" + suffix, *f.perf);
        }
        if (f.trace) {
            add("trace" + suffix, *f.trace);
        }
    }
}

// The torch-profiler traces of the first trial that has any, one RankTrace per rank holding the
// reference's and the candidate's profiles (each in its own "phase" range), placed end to end: PKB
// profiled them in two launches, whose clocks are unrelated (core/kineto.h profiles_end_to_end).
// Unreadable files are named in `warnings` and left out.
std::vector<RankTrace> profiler_traces(const PkbRun& run, std::vector<std::string>& warnings) {
    for (const auto& t : run.trials) {
        std::vector<SideProfile> profiles;
        for (const auto& [side, job] :
             {std::pair{std::string("reference"), t.reference ? &*t.reference : nullptr},
              std::pair{std::string("candidate"), t.candidate ? &*t.candidate : nullptr}}) {
            for (const auto& f : job ? job->ranks : std::vector<PkbRankFiles>{}) {
                if (!f.trace) {
                    continue;
                }
                try {
                    profiles.push_back({side, std::max(t.trial, 0), read_kineto_trace(*f.trace, f.rank)});
                } catch (const Error& failure) {
                    warnings.push_back(failure.what());
                }
            }
        }
        if (!profiles.empty()) {
            return profiles_end_to_end(profiles);
        }
    }
    return {};
}

std::optional<double> rank_wall(const PkbSidePerf& side, int rank) {
    if (rank < static_cast<int>(side.ranks.size()) && side.ranks[static_cast<std::size_t>(rank)]) {
        return side.ranks[static_cast<std::size_t>(rank)]->wall_time_ms;
    }
    return std::nullopt;
}

// Per side and rank: means over trials of PKB's figures; across ranks: the per-trial max (PKB's
// summarize_perf_artifacts) and speedup, per trial and their mean / geometric mean.
void add_perf(Store& store, std::int64_t run_id, const std::vector<std::pair<int, PkbTrialPerf>>& perf) {
    struct Acc {
        double sum = 0, count = 0;
    };
    std::map<std::tuple<Side, int, std::string>, Acc> means;
    double log_speedup = 0, speedups = 0;
    for (const auto& [trial, p] : perf) {
        const std::string suffix = ".trial_" + std::to_string(trial);
        for (const auto& [side, s] :
             {std::pair{Side::Reference, &p.reference}, std::pair{Side::Candidate, &p.candidate}}) {
            for (std::size_t r = 0; r < s->ranks.size(); ++r) {
                if (!s->ranks[r]) {
                    continue;
                }
                const PkbPerf& x = *s->ranks[r];
                for (const auto& [name, value] : {std::pair{"pkb_wall_time_ms", x.wall_time_ms},
                                                  {"pkb_wall_time_std_ms", x.wall_time_std_ms},
                                                  {"pkb_min_time_ms", x.min_time_ms},
                                                  {"pkb_max_time_ms", x.max_time_ms},
                                                  {"pkb_iterations", x.iterations},
                                                  {"pkb_warmup_iterations", x.warmup_iterations},
                                                  {"pkb_num_input_groups", x.num_input_groups}}) {
                    auto& a = means[{side, static_cast<int>(r), name}];
                    a.sum += value;
                    a.count += 1;
                }
            }
            if (s->max_ms) {
                store.add_perf_summary({run_id, side, -1, "pkb_wall_time_ms_max" + suffix, *s->max_ms});
                auto& a = means[{side, -1, "pkb_wall_time_ms_max"}];
                a.sum += *s->max_ms;
                a.count += 1;
            }
        }
        if (p.speedup) {
            store.add_perf_summary({run_id, Side::Candidate, -1, "pkb_speedup" + suffix, *p.speedup});
            if (*p.speedup > 0) {
                log_speedup += std::log(*p.speedup);
                speedups += 1;
            }
        }
    }
    for (const auto& [key, a] : means) {
        store.add_perf_summary(
            {run_id, std::get<0>(key), std::get<1>(key), std::get<2>(key), a.sum / a.count});
    }
    if (speedups > 0) {
        store.add_perf_summary(
            {run_id, Side::Candidate, -1, "pkb_speedup", std::exp(log_speedup / speedups)});
    }
    // The spread of PKB's per-trial speedups: two identical trials can differ by 2x.
    std::optional<double> low, high;
    for (const auto& [trial, p] : perf) {
        if (p.speedup) {
            low = std::min(low.value_or(*p.speedup), *p.speedup);
            high = std::max(high.value_or(*p.speedup), *p.speedup);
        }
    }
    if (low) {
        store.add_perf_summary({run_id, Side::Candidate, -1, "pkb_speedup_min", *low});
        store.add_perf_summary({run_id, Side::Candidate, -1, "pkb_speedup_max", *high});
    }
}

RankResultRow rank_row(std::int64_t run_id, int trial, int rank, Side side) {
    RankResultRow row;
    row.run_id = run_id;
    row.trial = trial;
    row.rank = rank;
    row.side = side;
    return row;
}

struct Imported {
    std::int64_t run_id = 0;
    RunStatus status = RunStatus::Pass;
    std::string summary;
};

RunRecord pkb_run_record(const PkbRun& run, const fs::path& dir, const std::string& run_dir,
                         const std::string& generation) {
    RunRecord rec;
    rec.problem_id = run.problem_id;
    rec.problem_stem = run.problem_stem;
    rec.mode = run.eval ? RunMode::Eval : RunMode::Dryrun;
    rec.backend = "pkb-" + run.backend;
    rec.world_size = std::max(run.world_size, 1);
    rec.atol = rec.rtol = kPkbTolerance; // PKB's default (run_local.py): its files record no other
    rec.trials = static_cast<int>(run.trials.size());
    rec.solution_kind = run.backend == "reference" ? SolutionKind::Reference : SolutionKind::Candidate;
    rec.generation = generation.empty() ? generation_of(dir) : parse_generation_label(generation);
    rec.command_line = {"pkbw", "import-pkb", dir.string()};
    rec.started_at = newest_mtime(run);
    rec.run_dir = run_dir;
    return rec;
}

// A compared trial's rows: per rank the reference's, the candidate's with its verdict, and its tensors.
void add_compared_ranks(Store& store, std::int64_t run_id, int trial, const PkbTrialComparison& c,
                        const PkbTrialPerf& p) {
    for (const auto& rc : c.ranks) {
        RankResultRow ref = rank_row(run_id, trial, rc.rank, Side::Reference);
        ref.phase = "outputs";
        ref.wall_ms = rank_wall(p.reference, rc.rank);
        store.add_rank_result(ref);
        RankResultRow cand = rank_row(run_id, trial, rc.rank, Side::Candidate);
        cand.phase = status::kPhaseCompare;
        cand.wall_ms = rank_wall(p.candidate, rc.rank);
        if (!rc.load_error.empty()) {
            cand.outcome = RankOutcome::InvalidOutput;
            cand.message = rc.load_error;
        } else if (!rc.comparison.pass) {
            cand.outcome = RankOutcome::Mismatch;
            cand.message = rc.comparison.first_error;
        }
        store.add_rank_result(cand);
        for (const auto& tc : rc.comparison.tensors) {
            TensorResultRow row = from_comparison(tc);
            row.run_id = run_id;
            row.trial = trial;
            row.rank = rc.rank;
            store.add_tensor_result(row);
        }
    }
    if (c.ranks.empty() && !c.pass()) { // no per-rank pair to hang the failure on
        RankResultRow row = rank_row(run_id, trial, 0, Side::Candidate);
        row.outcome = RankOutcome::InvalidOutput;
        row.phase = "outputs";
        row.message = c.result + ": " + c.first_error;
        store.add_rank_result(row);
    }
}

// Every trial's speedup, in trial order: one figure would hide their spread.
std::string speedups_text(const std::vector<std::pair<int, PkbTrialPerf>>& perf) {
    std::string speed;
    for (const auto& [trial, p] : perf) {
        if (p.speedup) {
            char buf[48];
            std::snprintf(buf, sizeof buf, "%s%.3fx (trial %d)", speed.empty() ? "; speedup " : ", ",
                          *p.speedup, trial);
            speed += buf;
        }
    }
    return speed;
}

Imported import_run(Store& store, const PkbRun& run, const fs::path& dir, const std::string& run_dir,
                    const std::string& generation) {
    const RunRecord rec = pkb_run_record(run, dir, run_dir, generation);

    Imported out;
    store.write_batch([&] {
        out.run_id = store.begin_run(rec);
        CompareOptions options;
        options.atol = options.rtol = kPkbTolerance;
        int matched = 0, compared = 0;
        std::string first_error;
        std::vector<std::pair<int, PkbTrialPerf>> perf;
        for (const auto& t : run.trials) {
            const int trial = std::max(t.trial, 0);
            const PkbTrialPerf p = summarize_pkb_perf(t);
            perf.emplace_back(trial, p);
            if (t.reference) {
                add_artifacts(store, out.run_id, trial, *t.reference, Side::Reference);
            }
            if (t.candidate) {
                add_artifacts(store, out.run_id, trial, *t.candidate, Side::Candidate);
            }
            const bool reference_only = !t.candidate && run.backend == "reference";
            const bool unpaired_dryrun = !run.eval && t.candidate && !t.reference;
            if (reference_only || unpaired_dryrun) {
                // Nothing to compare with: record the ranks whose outputs are present.
                const PkbJob& job = reference_only ? *t.reference : *t.candidate;
                const Side side = reference_only ? Side::Reference : Side::Candidate;
                for (const auto& f : job.ranks) {
                    RankResultRow row = rank_row(out.run_id, trial, f.rank, side);
                    row.outcome = f.pt.empty() ? RankOutcome::InvalidOutput : RankOutcome::Skipped;
                    row.phase = "outputs";
                    row.message =
                        f.pt.empty() ? "no rank_" + std::to_string(f.rank) + ".pt" : "not compared (no pair)";
                    row.wall_ms = rank_wall(side == Side::Reference ? p.reference : p.candidate, f.rank);
                    store.add_rank_result(row);
                }
                continue;
            }
            const PkbTrialComparison c = compare_pkb_trial(t, options);
            ++compared;
            matched += c.pass();
            if (!c.pass() && first_error.empty()) {
                first_error = "trial " + std::to_string(trial) + ": " + c.result + ": " + c.first_error;
                if (out.status == RunStatus::Pass) {
                    out.status = c.result == "tensor_mismatch" || c.result == "path_mismatch"
                                     ? RunStatus::Mismatch
                                     : RunStatus::InvalidOutput;
                }
            }
            add_compared_ranks(store, out.run_id, trial, c, p);
        }
        add_perf(store, out.run_id, perf);
        const std::string speed = speedups_text(perf);
        out.summary =
            "imported from PKB: " +
            (compared == 0 ? std::string("outputs not compared")
                           : std::to_string(matched) + "/" + std::to_string(compared) + " trials match") +
            speed + (first_error.empty() ? "" : "; " + first_error.substr(0, 300));
        store.finish_run(out.run_id, out.status, std::nullopt, out.summary, rec.started_at);
    });
    // The profiler's traces are the run's trace (their own connection: after the batch).
    std::vector<std::string> warnings;
    const auto traces = profiler_traces(run, warnings);
    if (!traces.empty()) {
        store_run_traces(store, out.run_id, traces);
    }
    for (const auto& w : warnings) {
        std::cerr << "warning: run " << out.run_id << ": trace not imported: " << w << "\n";
    }
    return out;
}

} // namespace

int run_import_pkb(const std::string& store_path, const std::string& dir, bool json,
                   const std::string& generation) {
    PkbLogs logs;
    try {
        logs = scan_pkb_logs(dir);
    } catch (const std::exception& e) { // a folder that is not PKB's logs: usage (exit 2), as elsewhere
        std::cerr << "pkbw import-pkb: " << e.what() << "\n";
        return status::kExitUsage;
    }
    // JSON lines: run_imported and run_skipped per run, then import_finished.
    auto line = [](nlohmann::json entry, const char* event) {
        entry["event"] = event;
        std::cout << entry.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    };
    try {
        Store store = Store::open(store_path);
        std::size_t imported = 0, skipped = 0;
        for (const auto& run : logs.runs) {
            const std::string run_dir =
                fs::absolute(run.trials.size() == 1 && !run.eval && run.trials[0].candidate
                                 ? run.trials[0].candidate->dir
                                 : run.problem_dir / run.backend)
                    .lexically_normal()
                    .string();
            RunFilter filter;
            filter.problem_stem = run.problem_stem;
            filter.backend = "pkb-" + run.backend;
            bool seen = false;
            for (const auto& existing : store.list_runs(filter, {}, 10000)) {
                seen = seen || (existing.run_dir == run_dir &&
                                existing.mode == (run.eval ? RunMode::Eval : RunMode::Dryrun));
            }
            nlohmann::json entry = {{"problem", run.problem_stem},
                                    {"backend", "pkb-" + run.backend},
                                    {"mode", run.eval ? "eval" : "dryrun"},
                                    {"trials", run.trials.size()},
                                    {"dir", run_dir}};
            if (seen) {
                ++skipped;
                if (json)
                    line(entry, "run_skipped");
                else
                    std::cout << "skipped (already imported): " << run.problem_stem << " pkb-" << run.backend
                              << " " << (run.eval ? "eval" : "dryrun") << " " << run_dir << "\n";
                continue;
            }
            const Imported r = import_run(store, run, dir, run_dir, generation);
            entry["run_id"] = r.run_id;
            entry["status"] = std::string(to_string(r.status));
            entry["summary"] = r.summary;
            ++imported;
            if (json)
                line(entry, "run_imported");
            else {
                std::cout << "run " << r.run_id << ": " << run.problem_stem << " pkb-" << run.backend << " "
                          << (run.eval ? "eval" : "dryrun") << " " << to_string(r.status) << " - "
                          << r.summary << "\n";
            }
        }
        if (json) {
            line({{"imported", imported}, {"skipped", skipped}, {"warnings", logs.warnings}},
                 "import_finished");
        } else {
            for (const auto& w : logs.warnings) {
                std::cerr << "warning: " << w << "\n";
            }
        }
        return 0;
    } catch (const Error& e) {
        std::cerr << "pkbw import-pkb: " << e.what() << "\n";
        return status::kExitFailed;
    } catch (const std::exception& e) { // filesystem errors and the like: still name what failed
        std::cerr << "pkbw import-pkb: " << dir << ": " << e.what() << "\n";
        return status::kExitFailed;
    }
}

} // namespace pkbw
