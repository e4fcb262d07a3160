// How many launches a perf run needs, measured (docs/perf.md "How many launches"): the launches of many
// measured `pkbw perf --json` runs of one pair are pooled, and for each L drawn again and again as runs of
// L launches, each computed with this build's rules (the launcher's PerfCollector: the hold, the pooling
// over launches, the headline figure, the verdict) and given the one look the launcher gives an
// ambiguous run (L more launches, up to twice L, drawn from the rest). Printed per L: how often the
// run's 95% interval holds the pooled figure of the launches it did not take (held out), the interval's
// median half-width, the verdicts (against the verdict of all the launches pooled), and the launches
// the runs took (the look included). With 400 draws a coverage near 95% is known to about +-1 point. Each
// launch is an independent set of processes with its own placement and inputs, so a draw of L of them is what
// a run of L launches could have measured; what it cannot show is variation slower than the batch the
// launches came from (another machine, another day). Usage: pkbw_bench_launch_count [--draws N] [--seed S]
// [--launches 2,3,4,5,6] RUN.jsonl...
//        (the runs of one pair, as tools/gpu/replicate.sh writes them)
#include "perf_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace {

using nlohmann::json;
using pkbw::cli::PerfCollector;
using pkbw::cli::PerfFigures;

struct Event {
    int rank = 0;
    json body;
};
using Launch = std::vector<Event>; // its perf_result events, PKB's protocol left out

// The launches of one run file: a timing_plan event of rank 0 starts one (as perf_recompute reads them).
// Only launches that timed both sides of pkbw's protocol are kept, and only from a run that passed (an
// invalid_timing run's figures are no result).
std::vector<Launch> read_launches(const char* path) {
    std::vector<Launch> launches;
    bool passed = false;
    std::ifstream in(path);
    if (!in) {
        std::fprintf(stderr, "%s: cannot be read\n", path);
        std::exit(1);
    }
    for (std::string line; std::getline(in, line);) {
        const json event = json::parse(line, nullptr, false);
        if (!event.is_object())
            continue;
        const std::string name = event.value("event", "");
        if (name == "run_finished")
            passed = event.value("status", "") == "pass";
        if (name != "timing_plan" && name != "perf_result")
            continue; // other events' fields may be null (a rank's exit code)
        const int rank = event.value("rank", 0);
        if (name == "timing_plan" && rank == 0)
            launches.emplace_back();
        else if (name == "perf_result" && !launches.empty() && event.value("protocol", "") != "pkb")
            launches.back().push_back({rank, event});
    }
    std::erase_if(launches, [](const Launch& l) {
        bool reference = false, candidate = false;
        for (const auto& e : l) {
            reference = reference || e.body.value("side", "") == "reference";
            candidate = candidate || e.body.value("side", "") == "candidate";
        }
        return !(reference && candidate);
    });
    if (!passed) {
        std::fprintf(stderr, "%s: the run did not pass; its launches are left out\n", path);
        launches.clear();
    }
    return launches;
}

PerfFigures compute(const std::vector<Launch>& pool, const std::vector<std::size_t>& chosen) {
    PerfCollector perf;
    for (std::size_t i = 0; i < chosen.size(); ++i) {
        perf.set_launch(static_cast<int>(i));
        for (const auto& e : pool[chosen[i]])
            perf.add(e.rank, e.body);
    }
    return perf.compute({}, 1);
}

std::vector<int> parse_list(const char* text) {
    std::vector<int> values;
    std::stringstream in(text);
    for (std::string item; std::getline(in, item, ',');)
        values.push_back(std::stoi(item));
    return values;
}

struct Tally {
    int draws = 0, covered = 0, launches_used = 0;
    std::vector<double> half_widths; // log scale, as a fraction
    std::map<std::string, int> verdicts;
};

} // namespace

int main(int argc, char** argv) {
    int draws = 200;
    unsigned seed = 1;
    std::vector<int> counts = {2, 3, 4, 5, 6};
    std::vector<Launch> pool;
    for (int a = 1; a < argc; ++a) {
        if (!std::strcmp(argv[a], "--draws") && a + 1 < argc)
            draws = std::stoi(argv[++a]);
        else if (!std::strcmp(argv[a], "--seed") && a + 1 < argc)
            seed = static_cast<unsigned>(std::stoul(argv[++a]));
        else if (!std::strcmp(argv[a], "--launches") && a + 1 < argc)
            counts = parse_list(argv[++a]);
        else
            for (auto& l : read_launches(argv[a]))
                pool.push_back(std::move(l));
    }
    if (pool.size() < 4) {
        std::fprintf(stderr,
                     "usage: %s [--draws N] [--seed S] [--launches 2,3,...] RUN.jsonl... "
                     "(at least 4 launches with both sides timed; %zu read)\n",
                     argv[0], pool.size());
        return 2;
    }
    std::vector<std::size_t> all(pool.size());
    std::iota(all.begin(), all.end(), 0);
    const PerfFigures whole = compute(pool, all);
    std::printf("%zu launches pooled: %s figure %.4f [%.4f, %.4f] %s\n", pool.size(), whole.headline.c_str(),
                whole.pkbw.speedup, whole.pkbw.ci_low, whole.pkbw.ci_high,
                pkbw::verdict_name(whole.pkbw.verdict).c_str());
    std::mt19937_64 random(seed);
    for (int count : counts) {
        if (count < 1 || static_cast<std::size_t>(count) * 2 > pool.size()) {
            std::printf("L=%d: skipped (needs %d launches in the pool for the look)\n", count, 2 * count);
            continue;
        }
        Tally t;
        for (int d = 0; d < draws; ++d) {
            std::vector<std::size_t> order = all;
            std::shuffle(order.begin(), order.end(), random);
            std::vector<std::size_t> chosen(order.begin(), order.begin() + count);
            PerfFigures f = compute(pool, chosen);
            // The one look (Run::extended_launch_count): an ambiguous run of 3 or more adds up to twice L.
            if (f.pkbw.verdict == pkbw::Verdict::Ambiguous && count >= 3) {
                chosen.assign(order.begin(), order.begin() + 2 * count);
                f = compute(pool, chosen);
            }
            // The target: the pooled figure of the launches this run did not take (held out, so that a
            // run's own launches do not pull the target towards it).
            const std::vector<std::size_t> rest(order.begin() + static_cast<std::ptrdiff_t>(chosen.size()),
                                                order.end());
            const double target = compute(pool, rest).pkbw.speedup;
            ++t.draws;
            t.launches_used += static_cast<int>(chosen.size());
            t.covered += f.pkbw.ci_low <= target && target <= f.pkbw.ci_high;
            t.half_widths.push_back(0.5 * std::log(f.pkbw.ci_high / f.pkbw.ci_low));
            ++t.verdicts[pkbw::verdict_name(f.pkbw.verdict)];
        }
        std::sort(t.half_widths.begin(), t.half_widths.end());
        std::string verdicts;
        for (const auto& [name, n] : t.verdicts)
            verdicts += (verdicts.empty() ? "" : ", ") + name + " " + std::to_string(n);
        std::printf("L=%d: covered %.1f%% of %d runs, half-width median %.2f%% (90th %.2f%%), verdicts %s, "
                    "launches taken %.2f a run\n",
                    count, 100.0 * t.covered / t.draws, t.draws,
                    100.0 * t.half_widths[t.half_widths.size() / 2],
                    100.0 * t.half_widths[t.half_widths.size() * 9 / 10], verdicts.c_str(),
                    static_cast<double>(t.launches_used) / t.draws);
    }
    return 0;
}
