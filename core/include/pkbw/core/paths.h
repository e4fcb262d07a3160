// Default locations of pkbw's files (XDG base directories). The CLI's --store flag overrides.
#pragma once

#include <filesystem>

namespace pkbw {

// $PKBW_STORE, else $XDG_DATA_HOME/pkbw/runs.db, else ~/.local/share/pkbw/runs.db.
std::filesystem::path default_store_path();
// $PKBW_CACHE_DIR, else $XDG_CACHE_HOME/pkbw, else ~/.cache/pkbw.
std::filesystem::path default_cache_dir();

} // namespace pkbw
