// XDG base directories, with pkbw's own variables first. An empty variable counts as unset, as the
// XDG specification asks.
#include "pkbw/core/paths.h"

#include "pkbw/core/error.h"

#include <cstdlib>
#include <pwd.h>
#include <string>
#include <unistd.h>

namespace pkbw {

namespace {

const char* env(const char* name) {
    const char* value = std::getenv(name);
    return value != nullptr && *value != '\0' ? value : nullptr;
}

std::filesystem::path home_dir() {
    if (const char* home = env("HOME"))
        return home;
    // Services and containers sometimes run without HOME.
    if (const passwd* entry = getpwuid(getuid()); entry != nullptr && entry->pw_dir != nullptr)
        return entry->pw_dir;
    throw Error("cannot find the home directory: HOME is unset and the user has no passwd entry "
                "(set PKBW_STORE / PKBW_CACHE_DIR)");
}

} // namespace

std::filesystem::path default_store_path() {
    if (const char* store = env("PKBW_STORE"))
        return store;
    if (const char* data = env("XDG_DATA_HOME"))
        return std::filesystem::path(data) / "pkbw" / "runs.db";
    return home_dir() / ".local" / "share" / "pkbw" / "runs.db";
}

std::filesystem::path default_cache_dir() {
    if (const char* cache = env("PKBW_CACHE_DIR"))
        return cache;
    if (const char* xdg = env("XDG_CACHE_HOME"))
        return std::filesystem::path(xdg) / "pkbw";
    return home_dir() / ".cache" / "pkbw";
}

} // namespace pkbw
