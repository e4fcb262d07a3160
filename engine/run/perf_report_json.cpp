// A perf run's figures as `--json` writes them (perf_report.h's to_json): one function per section.
#include "perf_report.h"

namespace pkbw::cli {

using nlohmann::json;
namespace {

json summary_json(const SampleSummary& s) {
    return {{"count", s.count}, {"median_ms", s.median}, {"mean_ms", s.mean}, {"p5_ms", s.p5},
            {"p95_ms", s.p95},  {"min_ms", s.min},       {"max_ms", s.max},   {"stddev_ms", s.stddev}};
}

json launches_json(const std::vector<SpeedupEstimate>& launches) {
    json out = json::array();
    for (const auto& e : launches) {
        out.push_back({{"speedup", e.speedup}, {"ci_low", e.ci_low}, {"ci_high", e.ci_high}});
    }
    return out;
}

json sides_json(const PerfFigures& f) {
    json sides = json::object();
    for (const auto& [name, side] : f.sides) {
        json entry = summary_json(side.summary);
        if (f.collective != CollectiveKind::None) {
            entry["algbw_gbps"] = side.bandwidth.algbw_gbps;
            if (side.bandwidth.busbw_gbps > 0) {
                entry["busbw_gbps"] = side.bandwidth.busbw_gbps;
                if (!f.on_host) {
                    entry["busbw_fraction_of_nvlink"] = side.bandwidth.busbw_gbps / kNvlinkLineRateGbps;
                }
                if (f.calibrated_busbw_gbps > 0) {
                    entry["busbw_fraction_of_calibrated"] =
                        side.bandwidth.busbw_gbps / f.calibrated_busbw_gbps;
                }
            } else if (side.bandwidth.algbw_gbps > 0) {
                // A busbw of 0 would read as "nothing moved"; the factor is 0 because one rank sends
                // nothing over a link.
                entry["busbw_note"] =
                    "busbw factor is 0 at world size " + std::to_string(f.world_size) + ": algbw_gbps only";
            }
        }
        sides[name] = entry;
    }
    return sides;
}

json plausibility_json(const PerfFigures& f) {
    json floor = {{"floor_ms", f.floor.floor_ms},
                  {"term", floor_term_name(f.floor.term)},
                  {"memory_ms", f.floor.memory_ms},
                  {"compute_ms", f.floor.compute_ms},
                  {"communication_ms", f.floor.communication_ms},
                  {"safety_factor", f.floor.safety_factor},
                  {"below_floor", f.below_floor}};
    if (f.floor.floor_ms > 0) {
        floor["explanation"] = f.floor.explanation;
    } else {
        floor["note"] = f.floor.note;
    }
    return floor;
}

json timing_json(const json& plan) {
    json out = json::object();
    for (const char* key :
         {"calls_per_block", "pairs", "cold_inputs", "reason", "input_mode", "inputs_note", "inputs_info",
          "round_trip_ms", "round_trip_max_ms", "round_trip_trusted", "checked", "containment"}) {
        if (plan.contains(key)) {
            out[key] = plan[key];
        }
    }
    return out;
}

json pkbw_json(const PerfFigures& f) {
    json j = {{"speedup", f.pkbw.speedup},
              {"ci_low", f.pkbw.ci_low},
              {"ci_high", f.pkbw.ci_high},
              {"verdict", verdict_name(f.pkbw.verdict)},
              {"band", f.rule.band()},
              {"min_effect", f.rule.min_effect},
              {"noise_floor", f.rule.noise_floor},
              {"noise_floor_source", f.rule.floor_source},
              {"launches", launches_json(f.replicated.launches)},
              {"replicated", f.replicated.replicated},
              {"extended_from", f.extended_from},
              {"between_sd", f.replicated.between_sd},
              {"within_sd", f.replicated.within_sd},
              {"between_dominates", f.replicated.between_dominates},
              {"unseen_run_sd", f.replicated.unseen_run_sd},
              {"throttled_blocks", f.throttled_blocks},
              {"candidate_blocks", f.candidate_blocks},
              {"floored_blocks", f.floored_blocks},
              {"judge_margin_call_ms", f.judge_margin_call_ms},
              {"unconfirmed_factor", f.unconfirmed_factor}};
    if (!f.pkb_disagreement.empty()) {
        j["pkb_disagreement"] = f.pkb_disagreement;
    }
    return j;
}

json launched_json(const PerfFigures& f) {
    const SpeedupEstimate& l = f.launched.replicated.pooled;
    return {{"speedup", l.speedup},
            {"ci_low", l.ci_low},
            {"ci_high", l.ci_high},
            {"verdict", verdict_name(l.verdict)},
            {"floored_blocks", f.launched.floored_blocks},
            {"judge_margin_call_ms", f.launched.judge_margin_call_ms},
            {"reference_median_ms", launched_median_ms(f, "reference")},
            {"candidate_median_ms", launched_median_ms(f, "candidate")}};
}

json graph_json(const PerfFigures& f) {
    const SpeedupEstimate& g = f.graph.replicated.pooled;
    return {{"speedup", g.speedup},
            {"ci_low", g.ci_low},
            {"ci_high", g.ci_high},
            {"verdict", verdict_name(g.verdict)},
            {"launches", launches_json(f.graph.replicated.launches)},
            {"between_dominates", f.graph.replicated.between_dominates},
            {"unseen_run_sd", f.graph.replicated.unseen_run_sd},
            {"candidate_blocks", f.graph.candidate_blocks},
            {"floored_blocks", f.graph.floored_blocks},
            {"throttled_blocks", f.graph.throttled_blocks},
            {"judge_margin_call_ms", f.graph.judge_margin_call_ms},
            {"reference_median_ms", graph_median_ms(f, "reference")},
            {"candidate_median_ms", graph_median_ms(f, "candidate")},
            {"passes", f.graph_passes_high},
            {"passes_low", f.graph_passes_low},
            {"passes_reason", f.graph_passes_reason}};
}

} // namespace

json to_json(const PerfFigures& f) {
    json j = {{"sides", sides_json(f)},
              {"on_host", f.on_host},
              {"collective", collective_kind_name(f.collective)},
              {"collective_bytes", f.collective_bytes},
              {"world_size", f.world_size},
              {"calibrated_busbw_gbps", f.calibrated_busbw_gbps},
              {"clocks", f.clocks},
              {"warnings", f.warnings},
              {"plausibility", plausibility_json(f)},
              {"headline", f.headline},
              // Why the speedup is no result (the run's status), null when it is one: the figures below
              // stay, for inspection (docs/cli.md "--json").
              {"withheld", f.withheld.empty() ? json(nullptr) : json(f.withheld)}};
    if (!f.plan.is_null()) {
        j["timing"] = timing_json(f.plan);
    }
    if (!f.call_samples.empty()) {
        json calls = json::object();
        for (const auto& [side, summary] : f.call_samples) {
            calls[side] = summary_json(summary);
        }
        j["call_samples"] = calls;
    }
    if (!f.enqueue_share.empty()) {
        j["enqueue_share"] = f.enqueue_share;
    }
    if (f.has_pkbw) {
        j["pkbw"] = pkbw_json(f);
    }
    if (!f.headline_reason.empty()) {
        j["headline_reason"] = f.headline_reason;
    }
    if (f.launched.has_estimate) {
        j["launched"] = launched_json(f);
    }
    if (f.graph.has_estimate) {
        j["graph"] = graph_json(f);
    } else if (!f.graph_unavailable.empty()) {
        j["graph"] = {{"unavailable", f.graph_unavailable}};
    }
    if (f.pkb) {
        j["pkb"] = {{"reference_ms", f.pkb->reference_ms},
                    {"candidate_ms", f.pkb->candidate_ms},
                    {"speedup", f.pkb->speedup}};
    } else if (!f.pkb_side_ms.empty()) {
        j["pkb"] = f.pkb_side_ms;
    }
    if (!f.withheld.empty()) {
        // No verdict of a run whose speedup is no result, in any figure (as `show --json`): the figures
        // stay, for inspection, and `withheld` says why.
        for (const char* figure : {"pkbw", "launched", "graph"}) {
            if (j.contains(figure) && j[figure].contains("verdict")) {
                j[figure]["verdict"] = nullptr;
            }
        }
    }
    return j;
}

} // namespace pkbw::cli
