#include "stored_perf.h"

#include <cmath>
#include <cstdio>

using nlohmann::json;

namespace pkbw::cli {
namespace {

std::string number(double value) {
    if (std::isnan(value))
        return "nan";
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.4g", value);
    return buffer;
}

json optional_number(const std::optional<double>& value) {
    return value && std::isfinite(*value) ? json(*value) : json(nullptr);
}

// "[0.98, 1.12]" or "" when the run stored no interval.
std::string interval(const std::optional<double>& low, const std::optional<double>& high) {
    if (!low || !high)
        return {};
    return " [" + number(*low) + ", " + number(*high) + "]";
}

} // namespace

StoredPerf stored_perf(const std::vector<PerfSummaryRow>& summaries, RunStatus status) {
    StoredPerf perf;
    perf.pooled = stored_speedup(summaries);
    perf.status = status;
    for (const auto& row : summaries) {
        if (row.rank != -1)
            continue;
        const std::string& name = row.statistic;
        if (name == "median_ms" || name == "mean_ms" || name == "p5_ms" || name == "p95_ms" ||
            name == "algbw_gbps" || name == "busbw_gbps" || name == "pkb_mean_ms")
            perf.sides[std::string(to_string(row.side))][name] = row.value;
    }
    return perf;
}

json stored_perf_json(const StoredPerf& perf) {
    if (perf.empty())
        return nullptr;
    const StoredSpeedup& p = perf.pooled;
    json per_launch = json::array();
    for (const auto& launch : p.per_launch)
        per_launch.push_back({{"launch", launch.index},
                              {"speedup", launch.speedup},
                              {"ci_low", optional_number(launch.ci_low)},
                              {"ci_high", optional_number(launch.ci_high)}});
    json sides = json::object();
    for (const auto& [side, statistics] : perf.sides) {
        json figures = json::object();
        for (const auto& [name, value] : statistics)
            figures[name] = std::isfinite(value) ? json(value) : json(nullptr);
        sides[side] = figures;
    }
    return {
        {"speedup", optional_number(p.speedup)},
        {"ci_low", optional_number(p.ci_low)},
        {"ci_high", optional_number(p.ci_high)},
        // A withheld run's verdict is not a result either: its figures stay, for inspection.
        {"verdict", p.verdict && perf.withheld().empty() ? json(verdict_name(*p.verdict)) : json(nullptr)},
        {"verdict_code", p.verdict && perf.withheld().empty()
                             ? json(static_cast<int>(verdict_code(*p.verdict)))
                             : json(nullptr)},
        {"withheld", perf.withheld().empty() ? json(nullptr) : json(perf.withheld())},
        {"verdict_band", optional_number(p.band)},
        {"launches", p.launches ? json(*p.launches) : json(nullptr)},
        {"extended_from", p.extended_from ? json(*p.extended_from) : json(0)},
        {"per_launch", per_launch},
        {"pkb_speedup", optional_number(p.pkb_speedup)},
        {"sides", sides}};
}

void print_stored_perf(std::ostream& out, const StoredPerf& perf) {
    if (perf.empty())
        return;
    if (perf.withheld().empty())
        out << "  perf (as stored):\n";
    else
        out << "  perf (as stored; no result: " << perf.withheld() << ", the figures for inspection only):\n";
    for (const char* side : {"reference", "candidate", "bare_nccl"}) {
        const auto found = perf.sides.find(side);
        if (found == perf.sides.end())
            continue;
        const auto& s = found->second;
        const auto figure = [&](const char* name) {
            const auto at = s.find(name);
            return at == s.end() ? std::optional<double>() : std::optional<double>(at->second);
        };
        char label[32];
        std::snprintf(label, sizeof label, "    %-10s", side);
        out << label;
        if (auto median = figure("median_ms"))
            out << " median " << number(*median) << " ms";
        if (auto p5 = figure("p5_ms"), p95 = figure("p95_ms"); p5 && p95)
            out << "  p5 " << number(*p5) << "  p95 " << number(*p95);
        if (auto busbw = figure("busbw_gbps"))
            out << "  busbw " << number(*busbw) << " GB/s";
        else if (auto algbw = figure("algbw_gbps"))
            out << "  algbw " << number(*algbw) << " GB/s";
        if (auto pkb = figure("pkb_mean_ms"))
            out << "  (PKB's protocol: mean " << number(*pkb) << " ms)";
        out << "\n";
    }
    const StoredSpeedup& p = perf.pooled;
    if (p.speedup) {
        out << "    speedup    " << number(*p.speedup) << "x" << interval(p.ci_low, p.ci_high);
        if (!perf.withheld().empty())
            out << " withheld";
        else if (p.verdict)
            out << " " << verdict_name(*p.verdict);
        std::string notes;
        if (p.band)
            notes += "band x" + number(1 + *p.band);
        if (p.launches)
            notes += (notes.empty() ? "" : ", ") + std::to_string(*p.launches) + " launch" +
                     (*p.launches == 1 ? "" : "es");
        if (p.extended_from)
            notes += ", added when the first " + std::to_string(*p.extended_from) + " read ambiguous";
        if (!notes.empty())
            out << " (" << notes << ")";
        out << "\n";
        if (p.per_launch.size() > 1) {
            out << "    per launch";
            for (std::size_t i = 0; i < p.per_launch.size(); ++i)
                out << (i == 0 ? " " : ", ") << number(p.per_launch[i].speedup) << "x"
                    << interval(p.per_launch[i].ci_low, p.per_launch[i].ci_high);
            out << "\n";
        }
    }
    if (p.pkb_speedup)
        out << "    PKB        " << number(*p.pkb_speedup) << "x (PKB's protocol, not the headline)\n";
}

std::string speedup_cell(const StoredPerf& perf) {
    if (!perf.pooled.speedup)
        return "-";
    if (!speedup_is_result(perf.status))
        return speedup_withheld_word(perf.status);
    // Three decimals, as the run's own report prints it ("1.000x same", not "1x same" beside "0.9998x").
    char text[32];
    std::snprintf(text, sizeof text, "%.3fx", *perf.pooled.speedup);
    std::string cell = text;
    if (perf.pooled.verdict)
        cell += " " + verdict_name(*perf.pooled.verdict);
    return cell;
}

} // namespace pkbw::cli
