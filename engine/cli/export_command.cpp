#include "export_command.h"

#include "pkbw/core/chrome_trace.h"
#include "pkbw/core/error.h"
#include "pkbw/core/status.h"
#include "pkbw/core/store.h"
#include "pkbw/core/trace_store.h"

#include <iostream>

namespace pkbw::cli {

int run_export_command(const std::string& store_path, long long run_id, const std::string& format,
                       const std::string& output) {
    if (format != "chrome-trace" && format != "csv") {
        std::cerr << "pkbw export: unknown --format '" << format << "' (chrome-trace or csv)\n";
        return status::kExitUsage;
    }
    try {
        const Store store = Store::open_read_only(store_path);
        if (!store.get_run(run_id)) {
            std::cerr << "pkbw export: store " << store_path << " has no run " << run_id << "\n";
            return status::kExitFailed;
        }
        const auto traces = load_run_traces(store, run_id);
        if (traces.empty()) {
            std::cerr << "pkbw export: run " << run_id
                      << " has no traces (record them with --trace on eval, perf or dryrun)\n";
            return status::kExitFailed;
        }
        for (const auto& trace : traces) {
            if (trace.dropped_records > 0) {
                std::cerr << "pkbw export: warning: rank " << trace.rank << " dropped "
                          << trace.dropped_records << " CUPTI records; its timeline has gaps\n";
            }
            if (!trace.complete) {
                std::cerr << "pkbw export: warning: rank " << trace.rank
                          << "'s trace is incomplete (the rank ended before writing it all)\n";
            }
        }
        if (format == "csv" && kernel_summary(traces).empty())
            std::cerr << "pkbw export: run " << run_id
                      << " traced no kernels (the host backend runs none): the CSV has its header only\n";
        if (output == "-") {
            std::cout << (format == "csv" ? kernel_summary_csv(kernel_summary(traces))
                                          : chrome_trace_json(traces).dump() + "\n");
            std::cout.flush();
            return std::cout ? status::kExitOk : status::kExitFailed;
        }
        if (format == "csv") {
            export_kernel_summary_csv(traces, output);
        } else {
            export_chrome_trace(traces, output);
        }
        std::cerr << "pkbw export: run " << run_id << " (" << traces.size() << " ranks) -> " << output
                  << "\n";
        return 0;
    } catch (const Error& error) {
        std::cerr << "pkbw export: " << error.what() << "\n";
        return status::kExitFailed;
    }
}

} // namespace pkbw::cli
