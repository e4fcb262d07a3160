// The perf side of a run (report_perf) and `pkbw calibrate`: split from run.cpp, which owns the rest
// of a run's life.
#include "pkbw/core/perf_stats.h"
#include "pkbw/core/run_layout.h"
#include "pkbw/core/sweep_table.h"
#include "pkbw/tracer_control.h"
#include "run_session.h"

#include <algorithm>
#include <cmath>
#include <fstream>

namespace pkbw::cli::detail {

MachinePeaks Run::machine_peaks(const PerfFigures& figures) const {
    MachinePeaks peaks;
    if (backend_ != "cuda") {
        peaks.source = "the " + backend_ + " backend (no device rates)";
        return peaks;
    }
    // Rank 0's device: pkbw runs one kind of GPU per machine.
    std::string device;
    if (auto hello = hellos_.find(0);
        hello != hellos_.end() && hello->second.contains("device") && hello->second["device"].is_string())
        device = hello->second["device"].get<std::string>();
    if (auto documented = documented_peaks(device))
        peaks = *documented;
    else
        peaks.source = device.empty() ? "an unnamed device" : device;
    if (figures.calibrated_busbw_gbps > 0) {
        peaks.busbw_gbps = figures.calibrated_busbw_gbps;
        peaks.busbw_source = "calibrated, " + run_layout::calibration_file_name(options_.nproc);
    }
    // The memory term assumes every call reads its inputs from device memory. A block whose inputs do
    // not span 3x L2 (--rotation none, a memory budget too small) may be served from L2 (tens of MiB
    // on a GPU): no memory floor then.
    if (!figures.plan.is_object() || !figures.plan.value("cold_inputs", false))
        peaks.memory_gbps = 0;
    return peaks;
}

std::uint64_t Run::launch_seed(int index) const {
    return launch_seed_base_ * 0x9E3779B97F4A7C15ull +
           static_cast<std::uint64_t>(index) * 0xBF58476D1CE4E5B9ull + 1;
}

bool Run::reference_first(int index) const {
    // Alternating over launches, the first launch's side drawn: neither side always goes first.
    return (index % 2 == 0) == (((launch_seed(0) >> 11) & 1) == 0);
}

int Run::launch_count() const {
    // PKB's Python judge (engine/python) times one launch: its rank program has no later-launch mode.
    // An A/A run sets the floor every later verdict of its problem uses: at least five launches.
    return options_.pkb_checkout ? 1 : std::max(options_.launches, aa_ ? 5 : 1);
}

int Run::extended_launch_count(int launches) {
    // One look: after the planned launches, an ambiguous headline verdict buys up to max_launches in all,
    // then the verdict stands whatever it is. Measured on the H200 (docs/perf.md "Replication,
    // measured"): identical 3.2 us kernels whose three launches happened to differ by 2% read
    // "ambiguous"; six launches decided each such run. A second look would stop early on a lucky
    // stretch, so there is none.
    // Unless asked, a run of fewer than three launches (a quick look, asked for) does not extend.
    const int most = options_.max_launches > 0 ? options_.max_launches
                     : launches >= 3           ? 2 * launches
                                               : launches;
    if (options_.pkb_checkout || most <= launches)
        return launches;
    perf_.set_rule(verdict_rule());
    const PerfFigures figures =
        perf_.compute(problem_ ? problem_->work(options_config()) : WorkModel{}, options_.nproc);
    if (!figures.has_pkbw || figures.pkbw.verdict != pkbw::Verdict::Ambiguous)
        return launches;
    extended_from_ = launches;
    if (progress_)
        progress_->set_launches(most);
    else if (!options_.json)
        err_ << "pkbw: ambiguous after " << launches << " launches (" << figures.pkbw.speedup << "x ["
             << figures.pkbw.ci_low << ", " << figures.pkbw.ci_high << "]): " << most - launches << " more\n";
    return most;
}

LaunchOutcome Run::launch_more(const LaunchSpec& first, const fs::path& reference_lib,
                               const fs::path& candidate_lib, Observer& observer, LaunchOutcome outcome) {
    int launches = launch_count();
    std::vector<std::string> leftovers = outcome.leftovers;
    for (int index = 1;; ++index) {
        // Another launch only after a clean one whose ranks timed both sides: a failure, a timeout or a
        // candidate that broke is the run's outcome as it stands.
        const auto timed_in = [&](int launch) {
            return std::count_if(perf_.series().begin(), perf_.series().end(), [&](const PerfSeries& s) {
                return s.launch == launch && s.protocol == "pkbw";
            });
        };
        if (outcome.end != LaunchEnd::Completed || timed_in(index - 1) == 0 || interrupt_signal())
            break;
        if (index == launches && extended_from_ == 0)
            launches = extended_launch_count(launches);
        if (index >= launches)
            break;
        json config = rank_config(reference_lib, candidate_lib);
        config["trials"] = 0;
        config["perf"]["pkb"] = false; // PKB's figure and the traced pass come from the first launch
        config.erase("trace");
        config["perf"]["launch_index"] = index;
        config["perf"]["launch_seed"] = launch_seed(index);
        config["perf"]["reference_first"] = reference_first(index);
        const fs::path path = run_dir_ / ("config_launch" + std::to_string(index) + ".json");
        std::ofstream(path) << config.dump(2) << "\n";
        const LaunchSpec spec = later_launch_spec(first, path);
        if (progress_)
            progress_->set_launch(index);
        else if (!options_.json)
            err_ << "pkbw: launch " << index + 1 << " of " << launches << "\n";
        perf_.set_launch(index);
        outcome = launch_ranks(spec, observer);
        leftovers.insert(leftovers.end(), outcome.leftovers.begin(), outcome.leftovers.end());
    }
    outcome.leftovers = leftovers;
    return outcome;
}

std::string Run::noise_floor_key() const {
    std::string device;
    if (auto hello = hellos_.find(0);
        hello != hellos_.end() && hello->second.contains("device") && hello->second["device"].is_string())
        device = hello->second["device"].get<std::string>();
    return backend_ + "|" + stem_ + "|w" + std::to_string(options_.nproc) + "|" +
           std::string(dtype_name(dtype_)) + "|m" + std::to_string(options_.m) + "|n" +
           std::to_string(options_.n) + "|" + options_.inputs + "|" + device;
}

namespace {
fs::path noise_floors_path(const RunOptions& options) {
    return options.runs_dir.parent_path() / "noise_floors.json";
}
} // namespace

VerdictRule Run::verdict_rule() const {
    VerdictRule rule;
    rule.min_effect = options_.min_effect;
    if (aa_)
        return rule; // an A/A run measures the floor: judged by the minimum effect alone
    const fs::path path = noise_floors_path(options_);
    std::ifstream file(path);
    if (!file)
        return rule;
    const json saved = json::parse(file, nullptr, false);
    const std::string key = noise_floor_key();
    if (!saved.is_object() || !saved.contains(key))
        return rule;
    const json& entry = saved[key];
    if (!entry.is_object() || !entry.contains("floor") || !entry["floor"].is_number() || entry["floor"] < 0) {
        err_ << "pkbw: " << path.string() << ": entry '" << key
             << "' needs a non-negative number 'floor'; ignored\n";
        return rule;
    }
    rule.noise_floor = entry["floor"].get<double>();
    rule.floor_source =
        "run " + std::to_string(entry.value("run_id", 0)) + " (" + path.filename().string() + ")";
    return rule;
}

void Run::record_noise_floor(const PerfFigures& figures) {
    if (!aa_ || !figures.has_pkbw || figures.pkbw.ci_low <= 0 || figures.pkbw.ci_high <= 0)
        return;
    // The furthest the A/A interval reached from 1, as a fraction: identical code showed that much.
    const double reach =
        std::max(std::abs(std::log(figures.pkbw.ci_low)), std::abs(std::log(figures.pkbw.ci_high)));
    const fs::path path = noise_floors_path(options_);
    json saved = json::object();
    if (std::ifstream file(path); file) {
        saved = json::parse(file, nullptr, false);
        if (!saved.is_object()) {
            err_ << "pkbw: " << path.string()
                 << " is not a JSON object; not updated (the A/A result is in the "
                 << "run's record)\n";
            return;
        }
    }
    saved[noise_floor_key()] = {{"floor", std::exp(reach) - 1.0}, {"speedup", figures.pkbw.speedup},
                                {"ci_low", figures.pkbw.ci_low},  {"ci_high", figures.pkbw.ci_high},
                                {"launches", figures.launches},   {"run_id", run_id_}};
    const fs::path temporary = path.string() + ".tmp";
    std::ofstream(temporary) << saved.dump(2) << "\n";
    std::error_code ec;
    fs::rename(temporary, path, ec);
    if (ec)
        err_ << "pkbw: cannot write " << path.string() << ": " << ec.message() << "\n";
}

double Run::calibrated_busbw(CollectiveKind collective) {
    double best = 0;
    // The machine's measured peak for this collective, when `pkbw calibrate` ran at this world size.
    // It also sets the plausibility floor's communication term, so a malformed row is named, not used.
    const fs::path calibration_path =
        options_.runs_dir.parent_path() / run_layout::calibration_file_name(options_.nproc);
    std::ifstream calibration(calibration_path);
    const json saved = calibration ? json::parse(calibration, nullptr, false) : json();
    if (calibration && !(saved.is_object() && saved.contains("results") && saved["results"].is_array()))
        err_ << "pkbw: " << calibration_path.string() << ": no 'results' array; calibration not used\n";
    if (saved.is_object() && saved.contains("results") && saved["results"].is_array()) {
        const std::string kind(collective_kind_name(collective));
        for (std::size_t i = 0; i < saved["results"].size(); ++i) {
            const json& row = saved["results"][i];
            if (!row.is_object() || !row.contains("kind") || !row["kind"].is_string() ||
                !row.contains("busbw_gbps") || !row["busbw_gbps"].is_number() || row["busbw_gbps"] < 0) {
                err_ << "pkbw: " << calibration_path.string() << ": results[" << i
                     << "] needs a string 'kind' and a non-negative number 'busbw_gbps'; ignored\n";
                continue;
            }
            if (row["kind"] == kind)
                best = std::max(best, row["busbw_gbps"].get<double>());
        }
    }
    return best;
}

// pkbw's figure in the store's summaries (docs/store.md): the headline speedup, its interval and verdict,
// the launched and graph figures behind it, and each launch's own.
void Run::record_speedup_summaries(const PerfFigures& figures) {
    recorder_.add_perf_summary(run_id_, "candidate", -1, "speedup", figures.pkbw.speedup);
    recorder_.add_perf_summary(run_id_, "candidate", -1, "speedup_ci_low", figures.pkbw.ci_low);
    recorder_.add_perf_summary(run_id_, "candidate", -1, "speedup_ci_high", figures.pkbw.ci_high);
    recorder_.add_perf_summary(run_id_, "candidate", -1, "verdict", verdict_code(figures.pkbw.verdict));
    recorder_.add_perf_summary(run_id_, "candidate", -1, "verdict_band", figures.rule.band());
    recorder_.add_perf_summary(run_id_, "candidate", -1, "launches", figures.launches);
    if (figures.extended_from > 0) // docs/store.md: the launches planned before an ambiguous verdict
        recorder_.add_perf_summary(run_id_, "candidate", -1, "extended_from", figures.extended_from);
    // docs/store.md: which figure the headline is (0 launched, 1 graph), and the launched one's own.
    recorder_.add_perf_summary(run_id_, "candidate", -1, "headline_graph",
                               figures.headline == "graph" ? 1 : 0);
    if (figures.launched.has_estimate) {
        const SpeedupEstimate& l = figures.launched.replicated.pooled;
        recorder_.add_perf_summary(run_id_, "candidate", -1, "launched_speedup", l.speedup);
        recorder_.add_perf_summary(run_id_, "candidate", -1, "launched_ci_low", l.ci_low);
        recorder_.add_perf_summary(run_id_, "candidate", -1, "launched_ci_high", l.ci_high);
        recorder_.add_perf_summary(run_id_, "candidate", -1, "launched_verdict", verdict_code(l.verdict));
    }
    if (figures.graph.has_estimate) { // docs/store.md: the graph figure's summaries
        const SpeedupEstimate& g = figures.graph.replicated.pooled;
        recorder_.add_perf_summary(run_id_, "candidate", -1, "graph_speedup", g.speedup);
        recorder_.add_perf_summary(run_id_, "candidate", -1, "graph_ci_low", g.ci_low);
        recorder_.add_perf_summary(run_id_, "candidate", -1, "graph_ci_high", g.ci_high);
        recorder_.add_perf_summary(run_id_, "candidate", -1, "graph_verdict", verdict_code(g.verdict));
        recorder_.add_perf_summary(run_id_, "candidate", -1, "graph_passes", figures.graph_passes_high);
        for (const char* side : {"reference", "candidate"}) {
            recorder_.add_perf_summary(run_id_, side, -1, "graph_median_ms", graph_median_ms(figures, side));
        }
    }
    for (std::size_t i = 0; i < figures.replicated.launches.size(); ++i) {
        const std::string n = std::to_string(i);
        recorder_.add_perf_summary(run_id_, "candidate", -1, "launch_speedup_" + n,
                                   figures.replicated.launches[i].speedup);
        recorder_.add_perf_summary(run_id_, "candidate", -1, "launch_ci_low_" + n,
                                   figures.replicated.launches[i].ci_low);
        recorder_.add_perf_summary(run_id_, "candidate", -1, "launch_ci_high_" + n,
                                   figures.replicated.launches[i].ci_high);
    }
}

void Run::report_perf(const std::string& status) {
    ProblemConfig config = options_config();
    // A PKB problem pkbw has no descriptor for has no work model: no bandwidth, the timings stand.
    perf_.set_rule(verdict_rule());
    PerfFigures figures = perf_.compute(problem_ ? problem_->work(config) : WorkModel{}, options_.nproc);
    figures.on_host = backend_ != "cuda";
    figures.extended_from = extended_from_;
    const auto run_status = parse_run_status(status);
    figures.withheld = run_status ? speedup_withheld_reason(*run_status) : "no clean result (" + status + ")";
    figures.calibrated_busbw_gbps = calibrated_busbw(figures.collective);
    check_plausibility(figures, problem_ ? problem_->work(config) : WorkModel{}, machine_peaks(figures));
    perf_warnings_ = figures.warnings;
    // Every sample of every rank goes to the store, PKB's series as block -1.
    for (const auto& series : perf_.series()) {
        // The store's blocks are the headline figure's, which every view of the samples reads: the launched
        // ones, or the graph's where it is the headline; the other figure is kept as summaries only.
        const std::string stored = figures.headline == "graph" ? "graph" : "pkbw";
        if (series.protocol == "calibrate" ||
            ((series.protocol == "graph" || series.protocol == "pkbw") && series.protocol != stored))
            continue;
        // A launch's blocks follow the one before's: launch x 1000 + its block (docs/store.md).
        const int block = series.protocol == "pkb" ? -1 : series.launch * 1000 + series.block;
        for (const auto& [rank, samples] : series.per_rank)
            recorder_.add_perf_samples(run_id_, series.side, rank, block, samples);
    }
    for (const auto& [side, f] : figures.sides) {
        recorder_.add_perf_summary(run_id_, side, -1, "median_ms", f.summary.median);
        recorder_.add_perf_summary(run_id_, side, -1, "mean_ms", f.summary.mean);
        recorder_.add_perf_summary(run_id_, side, -1, "p5_ms", f.summary.p5);
        recorder_.add_perf_summary(run_id_, side, -1, "p95_ms", f.summary.p95);
        // At one rank the busbw factor is 0: algbw alone, never a busbw of 0.
        if (f.bandwidth.algbw_gbps > 0)
            recorder_.add_perf_summary(run_id_, side, -1, "algbw_gbps", f.bandwidth.algbw_gbps);
        if (f.bandwidth.busbw_gbps > 0)
            recorder_.add_perf_summary(run_id_, side, -1, "busbw_gbps", f.bandwidth.busbw_gbps);
    }
    if (figures.floor.floor_ms > 0)
        recorder_.add_perf_summary(run_id_, "candidate", -1, "plausibility_floor_ms", figures.floor.floor_ms);
    if (figures.has_pkbw)
        record_speedup_summaries(figures);
    if (figures.pkb) {
        recorder_.add_perf_summary(run_id_, "reference", -1, "pkb_mean_ms", figures.pkb->reference_ms);
        recorder_.add_perf_summary(run_id_, "candidate", -1, "pkb_mean_ms", figures.pkb->candidate_ms);
        recorder_.add_perf_summary(run_id_, "candidate", -1, "pkb_speedup", figures.pkb->speedup);
    }
    for (const auto& [rank, clocks] : figures.clocks.items()) {
        const int r = std::stoi(rank);
        recorder_.add_perf_summary(run_id_, "candidate", r, "sm_clock_start_mhz",
                                   clocks["start"].value("sm_mhz", 0));
        recorder_.add_perf_summary(run_id_, "candidate", r, "sm_clock_end_mhz",
                                   clocks["end"].value("sm_mhz", 0));
    }
    if (const std::string why = graph_unavailable_flag(figures); !why.empty())
        candidate_flags_.push_back(
            {"info", why,
             "the graph figure replays each side's calls from a CUDA graph; where they "
             "cannot be captured the launched figure stands alone (docs/perf.md \"The "
             "graph figure\")"});
    record_noise_floor(figures);
    perf_json_ = to_json(figures);
    if (!options_.json)
        print_perf(out_, figures);
}

// Message sizes `pkbw calibrate` measures (bytes per rank); a series' block is its index here.
const std::vector<std::size_t> kCalibrationSizes = {1u << 20, 16u << 20, 64u << 20, 256u << 20, 1u << 30};

// `pkbw calibrate`: bare NCCL all-reduce/all-gather and peer-copy bandwidth on this machine, stored as a
// run (problem "calibrate") and in <data dir>/calibration.json, which perf reports compare against.
// The calibration's table from the ranks' series: per kind and size, the slowest rank's median time
// and its bandwidths, printed as they come and kept as the run's summaries.
json Run::calibration_results() {
    json table = json::array();
    for (const auto& series : perf_.series()) {
        if (series.protocol != "calibrate")
            continue;
        std::vector<std::vector<double>> ranks;
        for (const auto& [rank, samples] : series.per_rank)
            ranks.push_back(samples);
        const double median = percentile(slowest_rank_per_iteration(ranks), 50);
        // The byte count of each series is in its events; recover it from the run's event order.
        table.push_back({{"kind", series.side}, {"block", series.block}, {"median_ms", median}});
    }
    // A series' block is the index of its size in the configuration's list.
    const auto& sizes = kCalibrationSizes;
    json results = json::array();
    char line[200];
    if (!options_.json)
        out_ << "calibration (" << options_.nproc
             << " ranks, bf16, 20 iterations, median of the slowest rank)\n";
    for (auto& row : table) {
        const std::string kind = row["kind"];
        const int index = row["block"];
        if (index < 0 || index >= static_cast<int>(sizes.size()))
            continue;
        const double bytes = static_cast<double>(sizes[static_cast<std::size_t>(index)]);
        const double ms = row["median_ms"];
        // nccl-tests' S: the per-rank buffer (all-reduce) or the total output (all-gather); a peer copy
        // moves `bytes` once (factor 1).
        const CollectiveKind collective = kind == "allreduce"   ? CollectiveKind::AllReduce
                                          : kind == "allgather" ? CollectiveKind::AllGather
                                                                : CollectiveKind::Broadcast;
        const Bandwidth bw = bandwidth(collective, options_.nproc, bytes, ms);
        results.push_back({{"kind", kind},
                           {"bytes", bytes},
                           {"median_ms", ms},
                           {"algbw_gbps", bw.algbw_gbps},
                           {"busbw_gbps", bw.busbw_gbps}});
        recorder_.add_perf_summary(run_id_, "reference", -1,
                                   kind + "_" + std::to_string(static_cast<long long>(bytes)) + "_busbw_gbps",
                                   bw.busbw_gbps);
        if (!options_.json) {
            // At one rank the busbw factor is 0: algbw alone, as in the perf report, never "0 GB/s".
            if (bw.busbw_gbps > 0 || options_.nproc > 1)
                std::snprintf(line, sizeof line,
                              "  %-10s %12.0f B  %9.4f ms  algbw %7.1f GB/s  busbw %7.1f GB/s\n",
                              kind.c_str(), bytes, ms, bw.algbw_gbps, bw.busbw_gbps);
            else
                std::snprintf(line, sizeof line,
                              "  %-10s %12.0f B  %9.4f ms  algbw %7.1f GB/s  (busbw factor 0 at W=1)\n",
                              kind.c_str(), bytes, ms, bw.algbw_gbps);
            out_ << line;
        }
    }
    return results;
}

int Run::calibrate() {
    backend_ = "cuda";
    stem_ = "calibrate";
    start_.problem_id = 0;
    start_.problem_stem = stem_;
    start_.mode = "perf";
    start_.backend = backend_;
    start_.world_size = options_.nproc;
    start_.dtype = "bf16";
    start_.command_line = options_.command_line;
    start_.host = host_name();
    run_dir_ = options_.runs_dir / run_dir_name(stem_);
    start_.run_dir = run_dir_.string();
    recorder_.mark_stale_runs_aborted();
    run_id_ = recorder_.begin_run(start_);
    begun_ = true;
    std::error_code ec;
    fs::create_directories(run_dir_, ec);
    if (!gpu_present())
        return fail(to_string(RunStatus::Error), kExitEnvironment,
                    "calibrate needs GPUs (/dev/nvidia0 is absent)");
    json config = {{"version", 1},
                   {"run_id", run_id_},
                   {"mode", status::kModeCalibrate},
                   {"backend", "cuda"},
                   {"world_size", options_.nproc},
                   {"output_dir", run_dir_.string()},
                   {"calibrate_sizes", kCalibrationSizes},
                   {"calibrate_iterations", 20}};
    fs::path config_path = run_layout::config(run_dir_);
    std::ofstream(config_path) << config.dump(2) << "\n";
    LaunchSpec spec;
    spec.program = options_.rank_program.empty() ? executable_dir() / "pkbw-rank" : options_.rank_program;
    spec.args = {"--config", config_path.string()};
    spec.world_size = options_.nproc;
    spec.run_dir = run_dir_;
    spec.cuda = true;
    spec.timeouts = options_.timeouts;
    Observer observer(options_.json, out_, results_, hellos_, perf_);
    LaunchOutcome launch = launch_ranks(spec, observer);
    if (launch.end != LaunchEnd::Completed)
        return fail(to_string(launch.end == LaunchEnd::Timeout ? RunStatus::Timeout : RunStatus::Crash),
                    kExitEnvironment, launch.message);
    const json results = calibration_results();
    json saved = {
        {"host", host_name()}, {"world_size", options_.nproc}, {"run_id", run_id_}, {"results", results}};
    std::ofstream(options_.runs_dir.parent_path() / run_layout::calibration_file_name(options_.nproc))
        << saved.dump(2) << "\n";
    perf_json_ = saved;
    return finish(std::string(to_string(RunStatus::Pass)), kExitOk, "calibrated");
}

} // namespace pkbw::cli::detail

namespace pkbw::cli {

LaunchSpec later_launch_spec(const LaunchSpec& first, const std::filesystem::path& config) {
    LaunchSpec spec = first;
    spec.args = {"--config", config.string()};
    for (const char* name : tracer::kTracingVariables)
        spec.extra_env.erase(name);
    return spec;
}

} // namespace pkbw::cli
