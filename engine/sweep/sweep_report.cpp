#include "sweep_report.h"

#include "pkbw/core/error.h"
#include "pkbw/core/status.h"
#include "pkbw/core/store.h"

#include <cmath>
#include <cstdio>
#include <ostream>

using nlohmann::json;

namespace pkbw::cli {

namespace {

std::string p_name(double p) {
    char text[16];
    std::snprintf(text, sizeof text, "%g", p);
    return text;
}

std::string failures_text(const SweepGenerationRow& row) {
    std::string text;
    for (const auto& [kind, count] : row.failures)
        text += (text.empty() ? "" : ", ") + kind + " " + std::to_string(count);
    return text.empty() ? "-" : text;
}

json optional_number(const std::optional<double>& value) {
    return value && std::isfinite(*value) ? json(*value) : json(nullptr);
}

} // namespace

std::string pair_speedup_text(const SweepPairView& pair) {
    if (!pair.speedup)
        return "-";
    char text[96];
    std::snprintf(text, sizeof text, "%.2fx", *pair.speedup);
    std::string out = text;
    if (pair.verdict)
        out += " " + verdict_name(*pair.verdict);
    if (pair.ci_low && pair.ci_high) {
        std::snprintf(text, sizeof text, " (95%% interval %.3f-%.3f)", *pair.ci_low, *pair.ci_high);
        out += text;
    }
    return out;
}

void print_sweep_table(std::ostream& out, const SweepTable& table, const std::vector<double>& ps) {
    const bool perf = table.sweep.mode == "perf";
    std::size_t width = 10;
    for (const auto& g : table.generations)
        width = std::max(width, g.label.size());
    char cell[512];
    std::snprintf(cell, sizeof cell, "%-*s %9s %7s %6s", static_cast<int>(width), "generation", "attempted",
                  "correct", "faster");
    out << cell;
    for (double p : ps)
        out << "  fast_" << p_name(p);
    out << "  geomean  failures\n";
    for (const auto& g : table.generations) {
        std::snprintf(cell, sizeof cell, "%-*s %9d %7d %6s", static_cast<int>(width), g.label.c_str(),
                      g.attempted, g.correct, perf ? std::to_string(g.faster).c_str() : "-");
        out << cell;
        for (double p : ps) {
            const std::string header = "fast_" + p_name(p);
            std::string value = "-";
            if (p <= 0 || perf) {
                std::snprintf(cell, sizeof cell, "%.2f", g.fast_p(p));
                value = cell;
            }
            std::snprintf(cell, sizeof cell, "  %*s", static_cast<int>(header.size()), value.c_str());
            out << cell;
        }
        auto geo = g.geomean();
        if (geo)
            std::snprintf(cell, sizeof cell, "  %7.3f", *geo);
        else
            std::snprintf(cell, sizeof cell, "  %7s", "-");
        out << cell << "  " << failures_text(g) << "\n";
    }
}

void print_sweep(std::ostream& out, const SweepTable& table, const std::vector<double>& ps) {
    const auto& s = table.sweep;
    out << "sweep " << s.id << (s.name.empty() ? "" : " '" + s.name + "'") << ": " << s.mode
        << ", W=" << s.world_size << ", " << s.backend << ", " << s.status << ", " << table.done << "/"
        << table.total << " pairs judged\n"
        << "  created " << s.created_at << ", updated " << s.updated_at << "\n\n";
    print_sweep_table(out, table, ps);
    // Each timed pair's speedup with its verdict: fast_p above counts a pair toward p only when its
    // interval clears p (ci_low > p), so 1.31x beside "ambiguous" is not faster than 1.
    bool timed = false;
    for (const auto& v : table.pairs) {
        if (!v.speedup)
            continue;
        if (!timed) {
            out << "\nspeedups:\n";
            timed = true;
        }
        out << "  " << v.pair.generation_label << "  " << v.pair.problem_stem << "  " << pair_speedup_text(v);
        if (v.pair.run_id)
            out << "  run " << *v.pair.run_id;
        out << "\n";
    }
    bool header = false;
    for (const auto& v : table.pairs) {
        if (v.status == status::kPass)
            continue;
        if (!header) {
            out << "\nnot passing:\n";
            header = true;
        }
        out << "  " << v.pair.generation_label << "  " << v.pair.problem_stem << "  " << v.status;
        if (v.pair.run_id)
            out << "  run " << *v.pair.run_id;
        if (!v.pair.message.empty())
            out << "  " << pair_message_headline(v.pair.message, 200);
        out << "\n";
    }
    const json& options = s.options;
    bool renumbered = false;
    const json mapping = options.value("mapping", json::object());
    for (const auto& [generation, files] : mapping.items()) {
        for (const auto& [file, placed] : files.items()) {
            if (!placed.value("renumbered", false) && placed.value("placed_by", "name") == "name")
                continue;
            if (!renumbered) {
                out << "\nplaced by name (number differs or words reordered):\n";
                renumbered = true;
            }
            out << "  " << generation << "/" << file << " -> " << placed.value("problem", "") << " ("
                << placed.value("placed_by", "") << ")\n";
        }
    }
    const json unplaced = options.value("unplaced", json::array());
    if (!unplaced.empty()) {
        out << "\nnot placed (not run):\n";
        for (const auto& u : unplaced)
            out << "  " << u.value("generation", "") << "/" << u.value("file", "") << ": "
                << u.value("reason", "") << "\n";
    }
}

json sweep_json(const SweepTable& table, const std::vector<double>& ps) {
    const auto& s = table.sweep;
    json generations = json::array();
    for (const auto& g : table.generations) {
        json fast = json::object();
        for (double p : ps)
            fast[p_name(p)] = g.fast_p(p);
        auto geo = g.geomean();
        generations.push_back({{"generation", g.label},
                               {"attempted", g.attempted},
                               {"judged", g.judged},
                               {"correct", g.correct},
                               {"timed", g.timed},
                               {"faster", g.faster},
                               {"disputed", g.disputed}, // pkbw and PKB disagree in direction
                               {"fast_p", fast},
                               {"geomean_speedup", geo ? json(*geo) : json(nullptr)},
                               {"speedups", g.speedups},
                               {"fast_bounds", g.fast_bounds},
                               {"verdicts", g.verdicts},
                               {"failures", g.failures}});
    }
    json pairs = json::array();
    for (const auto& v : table.pairs)
        pairs.push_back({{"generation", v.pair.generation_label},
                         {"problem", v.pair.problem_stem},
                         {"solution", v.pair.solution_path},
                         {"placed_by", v.pair.placed_by},
                         {"run_id", v.pair.run_id ? json(*v.pair.run_id) : json(nullptr)},
                         {"state", v.pair.state},
                         {"status", v.status},
                         {"speedup", v.speedup ? json(*v.speedup) : json(nullptr)},
                         {"ci_low", optional_number(v.ci_low)},
                         {"ci_high", optional_number(v.ci_high)},
                         {"verdict", v.verdict ? json(verdict_name(*v.verdict)) : json(nullptr)},
                         {"seconds", v.pair.seconds ? json(*v.pair.seconds) : json(nullptr)},
                         {"message", v.pair.message}});
    return {{"sweep_id", s.id},
            {"uuid", s.uuid},
            {"name", s.name},
            {"mode", s.mode},
            {"backend", s.backend},
            {"world_size", s.world_size},
            {"status", s.status},
            {"created_at", s.created_at},
            {"updated_at", s.updated_at},
            {"done", table.done},
            {"total", table.total},
            {"generations", generations},
            {"pairs", pairs},
            {"unplaced", s.options.value("unplaced", json::array())},
            {"mapping", s.options.value("mapping", json::object())}};
}

int list_sweeps_command(const std::filesystem::path& store_path, bool as_json, std::ostream& out,
                        std::ostream& err) {
    Store store = Store::open_read_only(store_path);
    json list = json::array();
    for (const auto& s : list_sweeps(store)) {
        const auto table = sweep_table(store, s.id);
        if (as_json) {
            list.push_back({{"event", "sweep"},
                            {"sweep_id", s.id},
                            {"name", s.name},
                            {"mode", s.mode},
                            {"world_size", s.world_size},
                            {"backend", s.backend},
                            {"status", s.status},
                            {"created_at", s.created_at},
                            {"done", table.done},
                            {"total", table.total},
                            {"generations", table.generations.size()}});
            continue;
        }
        char line[256];
        std::snprintf(
            line, sizeof line, "%5lld  %-20s %-5s W=%-2d %-6s %-11s %4d/%-4d %zu generation%s  %s\n",
            static_cast<long long>(s.id), s.name.empty() ? "-" : s.name.c_str(), s.mode.c_str(), s.world_size,
            s.backend.c_str(), s.status.c_str(), table.done, table.total, table.generations.size(),
            table.generations.size() == 1 ? "" : "s", s.created_at.c_str());
        out << line;
    }
    for (const auto& line : list) // JSON lines: one sweep per line
        out << line.dump() << "\n";
    (void)err;
    return 0;
}

int show_sweep_command(const std::filesystem::path& store_path, std::int64_t sweep_id, bool as_json,
                       std::ostream& out, std::ostream& err) {
    Store store = Store::open_read_only(store_path);
    if (!find_sweep(store, sweep_id)) {
        err << "pkbw: no sweep " << sweep_id << " in " << store_path.string() << "\n";
        return status::kExitUsage;
    }
    const auto table = sweep_table(store, sweep_id);
    if (as_json) {
        json body = sweep_json(table, default_fast_p());
        body["event"] = "sweep_table";
        out << body.dump() << "\n";
    } else {
        print_sweep(out, table, default_fast_p());
    }
    return 0;
}

} // namespace pkbw::cli
