#include "bundle_command.h"

#include "pkbw/core/bundle.h"
#include "pkbw/core/error.h"
#include "pkbw/core/store.h"
#include "run.h"

#include <ostream>

namespace pkbw::cli {

int run_export_bundle(const std::filesystem::path& store_path, const std::vector<std::int64_t>& runs,
                      std::optional<std::int64_t> sweep, const std::filesystem::path& file, std::ostream& out,
                      std::ostream& err) {
    if (runs.empty() == !sweep) {
        err << "pkbw export-bundle: give run ids or --sweep ID (not both), then the bundle FILE\n";
        return kExitUsage;
    }
    if (!std::filesystem::exists(store_path)) {
        err << "pkbw export-bundle: no store at " << store_path.string() << "\n";
        return kExitUsage;
    }
    try {
        const Store store = Store::open_read_only(store_path); // a reader: never migrates or writes it
        std::vector<std::int64_t> ids = runs;
        if (sweep) {
            ids = sweep_run_ids(store, *sweep);
            if (ids.empty()) {
                err << "pkbw export-bundle: sweep " << *sweep << " has no recorded runs yet\n";
                return kExitUsage;
            }
        }
        const BundleReport report = export_bundle(store, ids, file);
        out << "bundle " << file.string() << ": " << report.runs.size() << " run(s), " << report.files
            << " artifact file(s) of " << report.file_bytes << " bytes; the bundle is "
            << std::filesystem::file_size(file) << " bytes\n";
        for (const auto& missing : report.missing)
            err << "pkbw export-bundle: not bundled: " << missing << "\n";
        return 0;
    } catch (const Error& failure) {
        err << "pkbw export-bundle: " << failure.what() << "\n";
        return kExitUsage;
    }
}

} // namespace pkbw::cli
