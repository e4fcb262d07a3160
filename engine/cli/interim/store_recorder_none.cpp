// TEMPORARY: used only while core/store.h is not on main; runs are kept in memory and `runs`/`show`
// say that no store is built in. Deleted once the store lands.
#include "store_recorder.h"

#include <cstdlib>
#include <ostream>

namespace fs = std::filesystem;

namespace pkbw::cli {

std::unique_ptr<Recorder> open_store_recorder(const fs::path&) {
    return std::make_unique<MemoryRecorder>();
}

fs::path resolve_store_path(const std::optional<std::string>& flag) {
    if (flag && !flag->empty())
        return *flag;
    if (const char* env = std::getenv("PKBW_STORE"))
        return env;
    const char* home = std::getenv("HOME");
    return fs::path(home ? home : "/tmp") / ".local/share/pkbw/runs.db";
}

fs::path default_cache_root() {
    if (const char* env = std::getenv("PKBW_CACHE_DIR"))
        return env;
    if (const char* xdg = std::getenv("XDG_CACHE_HOME"))
        return fs::path(xdg) / "pkbw";
    const char* home = std::getenv("HOME");
    return fs::path(home ? home : "/tmp") / ".cache/pkbw";
}

int list_runs(const fs::path&, const RunsQuery&, std::ostream&, std::ostream& err) {
    err << "pkbw: this build has no store\n";
    return 3;
}

int show_run(const fs::path&, std::int64_t, bool, std::ostream&, std::ostream& err) {
    err << "pkbw: this build has no store\n";
    return 3;
}

} // namespace pkbw::cli
