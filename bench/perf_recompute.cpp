// Recomputes the figures of measured `pkbw perf --json` runs with this build's rules: each file's
// perf_result events fed to the launcher's PerfCollector (a timing_plan event starts a launch), then the
// headline (which figure, its speedup), the launched and the graph figure printed, one line per file. What a
// change to how blocks are held to the judge's clock does to runs already measured (docs/perf.md
// "Replication, measured"). Usage: pkbw_bench_perf_recompute RUN.jsonl...
#include "perf_report.h"

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

int main(int argc, char** argv) {
    using nlohmann::json;
    if (argc < 2) {
        std::fprintf(stderr, "usage: %s RUN.jsonl...\n", argv[0]);
        return 2;
    }
    for (int a = 1; a < argc; ++a) {
        std::ifstream in(argv[a]);
        if (!in) {
            std::fprintf(stderr, "%s: cannot be read\n", argv[a]);
            return 1;
        }
        pkbw::cli::PerfCollector perf;
        int launch = -1;
        for (std::string line; std::getline(in, line);) {
            const json event = json::parse(line, nullptr, false);
            if (!event.is_object()) {
                continue;
            }
            const std::string name = event.value("event", "");
            if (name != "timing_plan" && name != "perf_result") {
                continue; // other events' fields may be null (a rank's exit code)
            }
            const int rank = event.value("rank", 0);
            if (name == "timing_plan" && rank == 0) {
                perf.set_launch(++launch);
            } else if (name == "perf_result" && launch >= 0) {
                perf.add(rank, event);
            }
        }
        const auto f = perf.compute({}, 1);
        const auto& l = f.launched.replicated.pooled;
        const auto& g = f.graph.replicated.pooled;
        std::printf(
            "%s headline %s %.3f [%.3f, %.3f] %s | launched %.3f [%.3f, %.3f] %s floored %d/%d | graph %.3f "
            "[%.3f, %.3f] %s floored %d/%d | margin %.4f ms a call\n",
            argv[a], f.headline.c_str(), f.pkbw.speedup, f.pkbw.ci_low, f.pkbw.ci_high,
            pkbw::verdict_name(f.pkbw.verdict).c_str(), l.speedup, l.ci_low, l.ci_high,
            pkbw::verdict_name(l.verdict).c_str(), f.launched.floored_blocks, f.launched.candidate_blocks,
            g.speedup, g.ci_low, g.ci_high, pkbw::verdict_name(g.verdict).c_str(), f.graph.floored_blocks,
            f.graph.candidate_blocks, f.judge_margin_call_ms);
    }
    return 0;
}
