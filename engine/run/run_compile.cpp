// Run's compile step (through the shared compile cache: the log, the archived source and diagnostics,
// the compile event) and its source check before anything is loaded (NVLink multicast where it is
// off for the ranks, safety.h). The rest of Run is in run.cpp.
#include "pkbw/core/protocol.h"
#include "pkbw/core/run_archive.h"
#include "pkbw/core/run_layout.h"
#include "pkbw/core/status.h"
#include "run_session.h"
#include "safety.h"

#include <cstdio>
#include <fstream>
#include <ostream>

namespace pkbw::cli::detail {

CompileRequest Run::compile_request(const fs::path& source) const {
    CompileRequest request;
    request.source = source;
    request.backend = backend_ == "cuda" ? Backend::Cuda : Backend::Host;
    request.arch = options_.arch;
    request.include_dirs = layout_->include_dirs;
    request.abi_headers = layout_->abi_headers;
    request.timeout_s = options_.timeouts.for_phase(std::string(status::kPhaseCompile));
    return request;
}

CompileResult Run::compile(const std::string& side, const fs::path& source) {
    const CompileRequest request = compile_request(source);
    CompileResult result = cache_->compile(request);
    fs::path log = run_layout::compile_log(run_dir_, side);
    std::ofstream(log) << result.log;
    recorder_.add_artifact(run_id_, {std::nullopt, std::nullopt, "compile_log", log.string()});
    recorder_.archive(run_id_,
                      {side + "_source", fs::absolute(source).string(), "", "", std::nullopt, std::nullopt});
    recorder_.archive(run_id_, {"compile_log", log.string(), "", "", std::nullopt, std::nullopt});
    std::vector<RunDiagnostic> archived_diagnostics;
    for (const auto& d : result.diagnostics)
        archived_diagnostics.push_back({side, d.file, d.line, d.column, d.severity, d.message});
    recorder_.archive(run_id_, {"diagnostics", "", "compile_" + side + ".json",
                                diagnostics_json(archived_diagnostics), std::nullopt, std::nullopt});
    json diagnostics = json::array();
    for (const auto& d : result.diagnostics) {
        diagnostics.push_back({{"file", d.file},
                               {"line", d.line},
                               {"column", d.column},
                               {"severity", d.severity},
                               {"message", d.message}});
    }
    emit({{"event", protocol::kCompile},
          {"side", side},
          {"status", result.ok ? "ok" : "error"},
          {"cached", result.cached},
          {"seconds", result.seconds},
          {"key", result.key},
          {"library", result.library.string()},
          {"message", result.message},
          {"rebuilt_reason", result.rebuilt_reason},
          {"diagnostics", diagnostics}});
    // A damaged cache entry was rebuilt, not loaded: the run says so (the cache is shared by runs).
    if (!result.rebuilt_reason.empty())
        candidate_warnings_.push_back(side + " " + result.rebuilt_reason);
    if (!options_.json) {
        char seconds[32];
        std::snprintf(seconds, sizeof seconds, "%.2f s", result.seconds);
        out_ << "  compile " << side << ": "
             << (result.ok ? (result.cached ? "cached" : "compiled") : "FAILED") << " (" << seconds << ")\n";
        if (!result.ok) {
            int shown = 0;
            for (const auto& d : result.diagnostics) {
                if (d.is_error() && shown++ < 10)
                    out_ << "    " << d.to_string() << "\n";
            }
            if (shown == 0)
                out_ << result.log.substr(0, 4000) << "\n";
        }
    }
    return result;
}

std::string Run::source_refusal(const std::string& solution_path, const std::string& source,
                                const std::map<std::string, std::string>& rank_environment) const {
    // Multicast is off for the ranks when this machine's environment says so, or where pkbw itself
    // turns it off for them (`rank_environment`: PKB runs) and the environment is silent.
    MulticastCheck check;
    check.backend = backend_;
    check.allowed = options_.allow_multicast;
    check.machine = multicast_environment_here();
    check.pkbw_adds = rank_environment;
    if (check.allowed && backend_ == "cuda" && !multicast_disabled_reason(check.machine).empty() &&
        find_multicast_use(source, source_language(solution_path)))
        err_ << "pkbw: --allow-multicast: this machine's environment still sets "
             << multicast_disabled_reason(check.machine) << " for the ranks; the candidate uses multicast\n";
    return multicast_refusal(solution_path, source, check);
}

} // namespace pkbw::cli::detail
