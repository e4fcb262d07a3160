#include "runsources.h"

#include "pkbw/core/error.h"
#include "pkbw/core/run_archive.h"
#include "pkbw/core/run_layout.h"
#include "pkbw/core/sha256.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace pkbw::app {
namespace fs = std::filesystem;
namespace {

constexpr std::size_t kMaxText = 4u << 20;

bool read_file(const fs::path& path, std::string* text) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        return false;
    }
    text->assign(kMaxText, '\0');
    in.read(text->data(), static_cast<std::streamsize>(kMaxText));
    text->resize(static_cast<std::size_t>(in.gcount()));
    return true;
}

nlohmann::json read_config(const RunData& data) {
    if (data.run.run_dir.empty()) {
        return {};
    }
    std::ifstream in(run_layout::config(data.run.run_dir));
    if (!in) {
        return {};
    }
    auto j = nlohmann::json::parse(in, nullptr, false);
    return j.is_object() ? j : nlohmann::json{};
}

std::string json_string(const nlohmann::json& j, const char* section, const char* key) {
    if (!j.is_object() || !j.contains(section) || !j[section].is_object()) {
        return {};
    }
    const auto& s = j[section];
    return s.contains(key) && s[key].is_string() ? s[key].get<std::string>() : std::string();
}

SourceFile read_source(const std::vector<fs::path>& candidates, const std::string& recorded) {
    SourceFile f;
    f.title = recorded;
    std::error_code ec;
    for (const fs::path& p : candidates) {
        if (fs::is_regular_file(p, ec) && read_file(p, &f.text)) {
            f.title = p.string();
            return f;
        }
    }
    f.error = recorded + ": not found";
    if (candidates.size() > 1) {
        f.error += " (looked in";
        for (const fs::path& p : candidates) {
            f.error += " " + p.parent_path().string() + ",";
        }
        f.error.back() = ')';
    }
    return f;
}

// The reference that ran: PKB's Python reference for PKB runs, else pkbw's problem file.
SourceFile reference_source(const RunRecord& run, const nlohmann::json& config,
                            const fs::path& problems_root) {
    SourceFile f;
    const std::string pkb_reference = json_string(config, "pkb", "reference_file");
    if (!pkb_reference.empty()) {
        f = read_source({fs::path(pkb_reference)}, pkb_reference);
    } else if (!problems_root.empty()) {
        const fs::path folder = problems_root / run.problem_stem;
        const fs::path file = folder / (run.backend == "host" ? "reference_host.cpp" : "reference.cu");
        f = read_source({file}, file.string());
        f.note = "pkbw's problem file (the run recorded no reference file)";
    } else {
        f.error = "no reference file recorded for this run";
    }
    return f;
}

// The candidate: the recorded path; a relative one against the checkout PKB runs name, the
// store's folder, the run folder's parent and the working directory.
SourceFile candidate_source(const RunRecord& run, const nlohmann::json& config, const fs::path& store_path) {
    SourceFile f;
    const std::string pkb_solution = json_string(config, "pkb", "solution_file");
    const std::string recorded = !pkb_solution.empty() ? pkb_solution : run.solution_path;
    if (recorded.empty()) {
        f.error = "no solution file recorded";
    } else {
        std::vector<fs::path> tries;
        const fs::path p(recorded);
        if (p.is_absolute()) {
            tries.push_back(p);
        } else {
            const std::string checkout = json_string(config, "pkb", "checkout");
            if (!checkout.empty()) {
                tries.push_back(fs::path(checkout) / p);
            }
            if (!store_path.empty()) {
                tries.push_back(fs::absolute(store_path).parent_path() / p);
            }
            if (!run.run_dir.empty()) {
                tries.push_back(fs::path(run.run_dir).parent_path() / p);
            }
            tries.push_back(fs::absolute(p));
        }
        f = read_source(tries, recorded);
        if (f.found() && !run.solution_sha256.empty() && sha256_hex(f.text) != run.solution_sha256) {
            f.note = "sha256 differs from the one recorded at run time: this file was edited since the run, "
                     "and is not the code that ran";
        }
    }
    return f;
}

// Every log of the run folder: compile logs first, then the ranks' in rank order.
std::vector<RunLog> run_folder_logs(const RunRecord& run) {
    std::vector<RunLog> out;
    std::error_code ec;
    if (!run.run_dir.empty() && fs::is_directory(run.run_dir, ec)) {
        std::vector<fs::path> logs;
        for (const auto& entry : fs::directory_iterator(run.run_dir, ec)) {
            if (entry.is_regular_file(ec) && entry.path().extension() == ".log") {
                logs.push_back(entry.path());
            }
        }
        auto rank_of = [](const fs::path& p) {
            const std::string n = p.stem().string();
            return n.rfind("rank_", 0) == 0 ? std::atoi(n.c_str() + 5) : -1;
        };
        std::sort(logs.begin(), logs.end(), [&](const fs::path& a, const fs::path& b) {
            return std::pair(rank_of(a), a.filename().string()) <
                   std::pair(rank_of(b), b.filename().string());
        });
        for (const fs::path& p : logs) {
            RunLog log;
            log.name = p.filename().string();
            read_file(p, &log.text);
            out.push_back(std::move(log));
        }
    }
    return out;
}

// What the store archived when the run was recorded is the code that ran: it replaces what the
// files on disk say (they may be gone, or edited since), and the disk stays the fallback for runs
// recorded before the archive existed.
void take_archived(const RunData& data, const fs::path& store_path, RunSources& s) {
    const RunRecord& run = data.run;
    if (data.from_store && run.id > 0 && !store_path.empty() && fs::exists(store_path)) {
        try {
            const Store store = Store::open_read_only(store_path);
            for (const RunFileText& f : run_sources(store, run.id)) {
                SourceFile* target = f.role == file_role::kCandidateSource   ? &s.candidate
                                     : f.role == file_role::kReferenceSource ? &s.reference
                                                                             : nullptr;
                if (!target || f.origin != "archived")
                    continue;
                target->title = f.name;
                target->text = f.text;
                target->error = f.found ? "" : f.problem;
                target->note = f.intact ? "archived in the store when the run was recorded (sha256 " +
                                              f.sha256.substr(0, 12) + ")"
                                        : f.problem;
            }
            for (const RunFileText& f : run_logs(store, run.id)) {
                if (f.origin != "archived")
                    continue;
                const std::string name = fs::path(f.name).filename().string();
                auto same = std::find_if(s.logs.begin(), s.logs.end(),
                                         [&](const RunLog& l) { return l.name == name; });
                if (same != s.logs.end())
                    same->text = f.text;
                else if (name != run_layout::kConfig)
                    s.logs.push_back({name, f.text});
            }
        } catch (const Error&) {
            // An older or unreadable store: the files on disk are all there is (said per file below).
        }
    }
}

} // namespace

RunSources load_run_sources(const RunData& data, const fs::path& store_path, const fs::path& problems_root) {
    RunSources s;
    const nlohmann::json config = read_config(data);
    s.reference = reference_source(data.run, config, problems_root);
    s.candidate = candidate_source(data.run, config, store_path);
    s.logs = run_folder_logs(data.run);
    take_archived(data, store_path, s);
    return s;
}

} // namespace pkbw::app
