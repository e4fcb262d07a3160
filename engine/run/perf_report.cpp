#include "perf_report.h"

#include <algorithm>
#include <cstdio>

namespace pkbw::cli {

using nlohmann::json;

void PerfCollector::add(int rank, const json& event) {
    const std::string protocol = event.value("protocol", "");
    if (protocol == "clocks") {
        clocks_[std::to_string(rank)] = {{"start", event.value("start", json::object())},
                                         {"end", event.value("end", json::object())},
                                         {"device", event.value("device", "")}};
        return;
    }
    const auto samples = event.find("samples_ms");
    if (protocol == "graph" && event.contains("unavailable")) {
        if (graph_unavailable_.empty()) {
            graph_unavailable_ = event.value("unavailable", std::string("no reason given"));
        }
        return;
    }
    if ((protocol != "pkbw" && protocol != "graph" && protocol != "pkb" && protocol != "calibrate") ||
        samples == event.end() || !samples->is_array() || !event.contains("side") ||
        !event["side"].is_string()) {
        ++malformed_;
        return;
    }
    const std::string side = event["side"].get<std::string>();
    const int block = event.value("block", 0);
    auto it = std::find_if(series_.begin(), series_.end(), [&](const PerfSeries& s) {
        return s.protocol == protocol && s.side == side && s.block == block && s.launch == launch_;
    });
    if (it == series_.end()) {
        PerfSeries added;
        added.protocol = protocol;
        added.side = side;
        added.block = block;
        added.launch = launch_;
        series_.push_back(std::move(added));
        it = series_.end() - 1;
    }
    if (event.value("throttled", false)) {
        it->throttled = true;
    }
    if (const int passes = event.value("passes", 0); protocol == "graph" && passes > 0) {
        graph_passes_low_ = graph_passes_low_ == 0 ? passes : std::min(graph_passes_low_, passes);
        graph_passes_high_ = std::max(graph_passes_high_, passes);
        if (graph_passes_reason_.empty() && rank == 0) {
            graph_passes_reason_ = event.value("passes_reason", std::string());
        }
    }
    if ((protocol == "pkbw" || protocol == "graph") && event.contains("judge_ms") &&
        event["judge_ms"].is_number()) {
        it->judge_ms[rank] = event["judge_ms"].get<double>();
        it->calls[rank] = event.value("calls", 0);
    }
    std::vector<double>& target = it->per_rank[rank];
    for (const auto& value : *samples) {
        if (value.is_number()) {
            target.push_back(value.get<double>());
        }
    }
    const double span = event.value("span_ms", 0.0), enqueue = event.value("enqueue_ms", 0.0);
    if (protocol == "pkbw" && span > 0 && enqueue > 0) {
        enqueue_shares_[side].push_back(enqueue / span);
    }
    if (const auto calls = event.find("call_samples_ms");
        protocol == "pkbw" && calls != event.end() && calls->is_array()) {
        for (const auto& value : *calls) {
            if (value.is_number()) {
                call_samples_[side].push_back(value.get<double>());
            }
        }
    }
}

void PerfCollector::add_plan(int rank, const json& event) {
    if (rank == 0 && event.value("calls_per_block", 0) > 0) {
        plan_ = event;
    }
}

PerfFigures PerfCollector::compute(const WorkModel& work, int world_size) const {
    PerfFigures f;
    f.collective = work.collective;
    f.collective_bytes = work.collective_bytes;
    f.world_size = world_size;
    f.clocks = clocks_;
    f.plan = plan_;
    for (const auto& [side, samples] : call_samples_) {
        f.call_samples[side] = summarize(samples);
    }
    for (const auto& [side, shares] : enqueue_shares_) {
        f.enqueue_share[side] = percentile(shares, 50);
    }

    f.launched = estimate_blocks(series_, "pkbw", rule_);
    f.graph = estimate_blocks(series_, "graph", rule_);
    f.graph_unavailable = graph_unavailable_;
    f.graph_passes_low = graph_passes_low_;
    f.graph_passes_high = graph_passes_high_;
    f.graph_passes_reason = graph_passes_reason_;
    // A method per kernel size: where both sides' calls take a few microseconds of device time, the host's
    // launch of each call is most of a launched call's time and its jitter most of the spread over runs;
    // the graph's replays leave the launches out, and are the headline there (the launched figure beside
    // it). Decided on the graph's device times, which are steady: a launched time near the threshold
    // would flip the choice from run to run.
    const double device_reference = graph_median_ms(f, "reference");
    const double device_candidate = graph_median_ms(f, "candidate");
    const bool graph_headline = f.launched.has_estimate && f.graph.has_estimate && device_reference > 0 &&
                                device_candidate > 0 && device_reference < kGraphHeadlineBelowMs &&
                                device_candidate < kGraphHeadlineBelowMs;
    if (graph_headline) {
        char why[240];
        std::snprintf(
            why, sizeof why,
            "a call takes %.1f us (reference) and %.1f us (candidate) of device time, under %.0f us, "
            "so a launched call is mostly the host's launch of it",
            device_reference * 1e3, device_candidate * 1e3, kGraphHeadlineBelowMs * 1e3);
        f.headline = "graph";
        f.headline_reason = why;
    }
    const BlockFigures& headline = graph_headline ? f.graph : f.launched;
    f.judge_margin_call_ms = headline.judge_margin_call_ms;
    f.unconfirmed_factor = headline.unconfirmed_factor;
    f.throttled_blocks = headline.throttled_blocks;
    f.candidate_blocks = headline.candidate_blocks;
    f.floored_blocks = headline.floored_blocks;
    for (const auto& [side, samples] : headline.per_side) {
        SideFigures figures;
        figures.summary = summarize(samples);
        figures.bandwidth =
            bandwidth(work.collective, world_size, work.collective_bytes, figures.summary.median);
        f.sides[side] = figures;
    }
    f.rule = rule_;
    if (headline.has_estimate) {
        f.has_pkbw = true;
        f.replicated = headline.replicated;
        f.pkbw = f.replicated.pooled;
        f.launches = headline.launches;
    }

    std::map<std::string, std::vector<std::vector<double>>> pkb_ranks;
    for (const auto& s : series_) {
        if (s.protocol == "pkb") {
            for (const auto& [rank, samples] : s.per_rank) {
                pkb_ranks[s.side].push_back(samples);
            }
        }
    }
    if (pkb_ranks.count("reference") && pkb_ranks.count("candidate")) {
        f.pkb = pkb_speedup(pkb_ranks["reference"], pkb_ranks["candidate"]);
    }
    for (const auto& [side, ranks] : pkb_ranks) {
        f.pkb_side_ms[side] = pkb_speedup(ranks, ranks).reference_ms;
    }
    if (f.pkb && f.has_pkbw) {
        f.pkb_disagreement = explain_pkb_disagreement(f);
    }
    return f;
}

std::string explain_pkb_disagreement(const PerfFigures& f) {
    if (!f.pkb || !f.has_pkbw || f.pkb->speedup <= 0 || f.pkbw.speedup <= 0) {
        return "";
    }
    const bool pkbw_decided = f.pkbw.verdict == Verdict::Faster || f.pkbw.verdict == Verdict::Slower;
    const bool opposite = (f.pkb->speedup > 1.0) != (f.pkbw.speedup > 1.0);
    if (!pkbw_decided || !opposite) {
        return "";
    }
    const auto ref = f.sides.find("reference");
    const auto cand = f.sides.find("candidate");
    if (ref == f.sides.end() || cand == f.sides.end() || ref->second.summary.median <= 0 ||
        cand->second.summary.median <= 0) {
        return "";
    }
    // How far PKB's time of each side is from pkbw's: the side PKB's method costs more explains it.
    const double ref_ratio = f.pkb->reference_ms / ref->second.summary.median;
    const double cand_ratio = f.pkb->candidate_ms / cand->second.summary.median;
    char text[640];
    const bool candidate_loses = cand_ratio > ref_ratio;
    std::snprintf(
        text, sizeof text,
        "PKB's protocol says %.3fx where pkbw says %.3fx (%s): PKB times one call at a time inside each "
        "side's process on the same inputs every call (a warm L2), with a barrier and a synchronisation "
        "per call, and takes the mean; pkbw times batched blocks of calls on fresh inputs with a cold L2 "
        "and takes the median. PKB's times are %.2fx pkbw's for the reference and %.2fx for the "
        "candidate: the %s pays more under PKB's method (%s)",
        f.pkb->speedup, f.pkbw.speedup, verdict_name(f.pkbw.verdict).c_str(), ref_ratio, cand_ratio,
        candidate_loses ? "candidate" : "reference",
        (candidate_loses ? cand_ratio : ref_ratio) > 1.0
            ? "fixed costs per call: launches, synchronisation, host work that batching hides"
            : "it gains less from inputs that stay in L2 between calls");
    return text;
}

void check_plausibility(PerfFigures& f, const WorkModel& work, const MachinePeaks& peaks) {
    f.floor = plausibility_floor(work, peaks, f.world_size);
    f.below_floor = false;
    f.warnings.clear();
    const auto candidate = f.sides.find("candidate");
    if (candidate == f.sides.end())
        return;
    if (auto warning = below_floor_warning("candidate", candidate->second.summary.median, f.floor)) {
        f.below_floor = true;
        f.warnings.push_back(*warning);
    }
}

namespace {
// The median time a call of `side` over one figure's blocks (ms; 0 without them).
double median_call_ms(const BlockFigures& figures, const std::string& side) {
    const auto it = figures.per_side.find(side);
    return it == figures.per_side.end() || it->second.empty() ? 0.0 : percentile(it->second, 50);
}
} // namespace

double graph_median_ms(const PerfFigures& f, const std::string& side) {
    return median_call_ms(f.graph, side);
}

std::string unconfirmed_line(const PerfFigures& f) {
    char text[400];
    std::snprintf(
        text, sizeof text,
        "the judge's clock confirms the candidate's own time to within %.2f us a call (%.0f%% of it): a "
        "process that under-reports by less is not caught, so the interval's lower end allows for it%s",
        f.judge_margin_call_ms * 1e3, 100.0 * (1.0 / f.unconfirmed_factor - 1.0),
        f.unconfirmed_factor < 0.9 ? " (calls this short confirm little: a verdict of faster needs more)"
                                   : "");
    return text;
}

double launched_median_ms(const PerfFigures& f, const std::string& side) {
    return median_call_ms(f.launched, side);
}

std::string graph_unavailable_flag(const PerfFigures& f) {
    return f.graph.has_estimate || f.graph_unavailable.empty() ? std::string()
                                                               : "no graph figure: " + f.graph_unavailable;
}

std::vector<std::string> graph_lines(const PerfFigures& f) {
    std::vector<std::string> lines;
    char text[600];
    if (!f.graph.has_estimate) {
        if (!f.graph_unavailable.empty()) {
            lines.push_back("graph figure: none (" + f.graph_unavailable + ")");
        }
        return lines;
    }
    const SpeedupEstimate& g = f.graph.replicated.pooled;
    const SpeedupEstimate& l = f.launched.replicated.pooled;
    if (f.headline == "graph") {
        // The headline above is the graph's: the launched figure beside it.
        lines.push_back(
            "the figure above is the graph figure (each side's block replayed from a CUDA graph: its "
            "calls back to back on the device, no host launch between them), since " +
            f.headline_reason);
        std::snprintf(
            text, sizeof text,
            "launched figure (each call launched by its process, as a caller pays it): speedup %.3fx  "
            "95%% CI [%.3f, %.3f]  %s; a call: reference %.4f ms, candidate %.4f ms",
            l.speedup, l.ci_low, l.ci_high, verdict_name(l.verdict).c_str(),
            launched_median_ms(f, "reference"), launched_median_ms(f, "candidate"));
        lines.emplace_back(text);
    } else {
        std::snprintf(
            text, sizeof text,
            "graph figure (each side's block replayed from a CUDA graph: its calls back to back on the "
            "device, no host launch between them): speedup %.3fx  95%% CI [%.3f, %.3f]  %s; a call: "
            "reference %.4f ms, candidate %.4f ms",
            g.speedup, g.ci_low, g.ci_high, verdict_name(g.verdict).c_str(), graph_median_ms(f, "reference"),
            graph_median_ms(f, "candidate"));
        lines.emplace_back(text);
    }
    if (f.graph_passes_high > 1) {
        const std::string passes =
            f.graph_passes_low == f.graph_passes_high
                ? std::to_string(f.graph_passes_high)
                : std::to_string(f.graph_passes_low) + "-" + std::to_string(f.graph_passes_high);
        std::snprintf(
            text, sizeof text,
            "the graph's blocks are %s passes over their %d input sets (%s): each later pass reads "
            "copies of the sets at addresses of their own, as PKB's rotation reads its copies again; the "
            "launched blocks read every set once",
            passes.c_str(), f.plan.value("calls_per_block", 0), f.graph_passes_reason.c_str());
        lines.emplace_back(text);
    }
    if (f.launched.has_estimate && l.verdict != g.verdict) {
        std::snprintf(
            text, sizeof text,
            "note: the launched blocks say %s (%.3fx) and the graph says %s (%.3fx): what differs is "
            "the host's launches of each call, which the graph leaves out",
            verdict_name(l.verdict).c_str(), l.speedup, verdict_name(g.verdict).c_str(), g.speedup);
        lines.emplace_back(text);
    }
    return lines;
}

std::vector<std::string> launch_bound_notes(const PerfFigures& f) {
    std::vector<std::string> notes;
    if (f.on_host) {
        return notes; // a CPU loop has no launch queue: its calls run as they are "queued"
    }
    for (const auto& [side, share] : f.enqueue_share) {
        if ((side != "reference" && side != "candidate") || share < kLaunchBoundShare) {
            continue;
        }
        char text[400];
        std::snprintf(
            text, sizeof text,
            "the %s is launch-bound: its process was still queueing calls for %.0f%% of its blocks' "
            "device time%s, so its time per call is the host's launch rate and moves with the host's CPU "
            "(its kernels alone take less)",
            side.c_str(), 100.0 * std::min(share, 1.0), side == "candidate" ? " (by its own account)" : "");
        notes.emplace_back(text);
    }
    return notes;
}

namespace {

// The pooled speedup, its verdict and what qualifies it: the extension, the clock's margin, each launch.
void print_speedup(std::ostream& out, const PerfFigures& f) {
    char line[320];
    if (!f.withheld.empty()) { // no verdict, no interval that reads as one: the figures, for inspection
        std::snprintf(line, sizeof(line),
                      "    speedup withheld: %s; for inspection only, %.3fx [%.3f, %.3f] over %d launch%s\n",
                      f.withheld.c_str(), f.pkbw.speedup, f.pkbw.ci_low, f.pkbw.ci_high, f.launches,
                      f.launches == 1 ? "" : "es");
        out << line;
        return;
    }
    std::snprintf(line, sizeof(line),
                  "    speedup %.3fx  95%% CI [%.3f, %.3f]  %s  (%d launch%s; no difference "
                  "within x%.3f: %s)\n",
                  f.pkbw.speedup, f.pkbw.ci_low, f.pkbw.ci_high, verdict_name(f.pkbw.verdict).c_str(),
                  f.launches, f.launches == 1 ? "" : "es", 1.0 + f.rule.band(),
                  f.rule.floor_source.empty() ? "the minimum effect; no A/A noise floor measured"
                                              : ("A/A noise floor from " + f.rule.floor_source).c_str());
    out << line;
    if (f.extended_from > 0) {
        out << "    extended: ambiguous after " << f.extended_from << " launches, so " << f.launches
            << " in all (one look; the verdict above is the last)\n";
    }
    if (f.unconfirmed_factor < 0.995) {
        out << "    " << unconfirmed_line(f) << "\n";
    }
    if (f.replicated.replicated) {
        std::string each;
        for (const auto& e : f.replicated.launches) {
            char one[64];
            std::snprintf(one, sizeof one, "%s%.3f [%.3f, %.3f]", each.empty() ? "" : ", ", e.speedup,
                          e.ci_low, e.ci_high);
            each += one;
        }
        out << "    launches: " << each
            << (f.replicated.between_dominates ? "  (the launches differ more than each one's own noise: "
                                                 "run-to-run variation dominates)"
                                               : "")
            << "\n";
        if (f.replicated.unseen_run_sd > 0) {
            char allowance[160];
            std::snprintf(
                allowance, sizeof allowance,
                "    the interval also allows %.1f%% (sd) for what moves between runs and not between "
                "one run's launches\n",
                100 * f.replicated.unseen_run_sd);
            out << allowance;
        }
    } else {
        out << "    one launch: the interval covers this process's blocks only, not run-to-run "
               "variation\n";
    }
    if (f.throttled_blocks > 0) {
        out << "    " << f.throttled_blocks
            << " block(s) dropped: the GPU's clocks slowed down during them\n";
    }
    if (!f.pkb_disagreement.empty()) {
        out << "    note: " << f.pkb_disagreement << "\n";
    }
}

} // namespace

void print_perf(std::ostream& out, const PerfFigures& f) {
    char line[320];
    const auto bare = f.sides.find("bare_nccl");
    if (!f.plan.is_null()) {
        std::snprintf(
            line, sizeof(line),
            "  perf (pkbw: %d launch%s of %d ABBA blocks a side of %d calls, each call on fresh inputs%s; "
            "time per call: the side's own time of the block, the candidate's raised where its blocks "
            "cost more on the judge's clock than the reference's beyond their jitter (round trip up to "
            "%.3f ms); slowest rank per block)\n",
            f.launches, f.launches == 1 ? "" : "es", f.plan.value("pairs", 0),
            f.plan.value("calls_per_block", 0),
            f.plan.value("checked", false) ? " and checked" : ", not checked",
            f.plan.value("round_trip_max_ms", f.plan.value("round_trip_ms", 0.0)));
        out << line;
        if (f.on_host) {
            out << "    host backend: CPU loops timed against a CPU reference; these figures compare the two "
                   "here and say nothing of a GPU\n";
        }
        const std::string info = f.plan.value("inputs_info", std::string());
        if (!info.empty()) {
            out << "    inputs: " << info << "\n";
        }
    } else {
        out << "  perf (pkbw: slowest rank per block, ABBA blocks)\n";
    }
    for (const auto& [name, side] : f.sides) {
        std::snprintf(line, sizeof(line), "    %-10s median %9.4f ms  p5 %9.4f  p95 %9.4f  (n=%zu)",
                      name.c_str(), side.summary.median, side.summary.p5, side.summary.p95,
                      side.summary.count);
        out << line;
        if (f.collective != CollectiveKind::None && side.bandwidth.busbw_gbps <= 0 &&
            side.bandwidth.algbw_gbps > 0) {
            // One rank: the busbw factor is 0, and "0 GB/s" would read as nothing moved.
            std::snprintf(line, sizeof(line), "  algbw %7.1f GB/s (busbw factor 0 at W=%d)",
                          side.bandwidth.algbw_gbps, f.world_size);
            out << line;
        }
        if (f.collective != CollectiveKind::None && side.bandwidth.busbw_gbps > 0 && f.on_host) {
            std::snprintf(line, sizeof(line), "  busbw %7.1f GB/s", side.bandwidth.busbw_gbps);
            out << line;
        } else if (f.collective != CollectiveKind::None && side.bandwidth.busbw_gbps > 0) {
            std::snprintf(line, sizeof(line), "  busbw %7.1f GB/s (%4.1f%% of NVLink)",
                          side.bandwidth.busbw_gbps, 100.0 * side.bandwidth.busbw_gbps / kNvlinkLineRateGbps);
            out << line;
            if (f.calibrated_busbw_gbps > 0) {
                std::snprintf(line, sizeof(line), " %5.1f%% of calibrated",
                              100.0 * side.bandwidth.busbw_gbps / f.calibrated_busbw_gbps);
                out << line;
            }
            if (bare != f.sides.end() && name != "bare_nccl" && bare->second.bandwidth.busbw_gbps > 0) {
                std::snprintf(line, sizeof(line), " %5.1f%% of bare NCCL",
                              100.0 * side.bandwidth.busbw_gbps / bare->second.bandwidth.busbw_gbps);
                out << line;
            }
        }
        out << "\n";
    }
    for (const auto& [name, summary] : f.call_samples) {
        std::snprintf(
            line, sizeof(line),
            "    %-10s each call as its process timed it: median %9.4f ms  p5 %9.4f  p95 %9.4f  (n=%zu)\n",
            name.c_str(), summary.median, summary.p5, summary.p95, summary.count);
        out << line;
    }
    for (const std::string& note : launch_bound_notes(f)) {
        out << "    note: " << note << "\n";
    }
    if (f.has_pkbw)
        print_speedup(out, f);
    if (f.withheld.empty()) { // the other figure's verdict is no result either
        for (const std::string& text : graph_lines(f)) {
            out << "    " << text << "\n";
        }
    }
    if (f.pkb) {
        std::snprintf(
            line, sizeof(line),
            "    PKB-compatible (timed inside each side's process, as PKB does): ref %.4f ms | cand "
            "%.4f ms | speedup %.3fx%s\n",
            f.pkb->reference_ms, f.pkb->candidate_ms, f.pkb->speedup,
            f.withheld.empty() ? "" : " (for inspection only: the run's speedup is withheld)");
        out << line;
    }
    for (const auto& warning : f.warnings)
        out << "    warning: " << warning << "\n";
}

} // namespace pkbw::cli
