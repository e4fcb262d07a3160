#include "locate.h"

#include "pkbw/core/error.h"

#include <algorithm>
#include <cstdlib>
#include <system_error>

#ifndef PKBW_SOURCE_ROOT
#define PKBW_SOURCE_ROOT ""
#endif

namespace fs = std::filesystem;

namespace pkbw::cli {
namespace {

// Every file under `dir` (the reference toolkit's headers), sorted so that the cache key does not
// depend on the directory's order.
std::vector<fs::path> files_under(const fs::path& dir) {
    std::vector<fs::path> files;
    std::error_code ec;
    for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        if (it->is_regular_file(ec))
            files.push_back(it->path());
    }
    std::sort(files.begin(), files.end());
    return files;
}

} // namespace

std::optional<DataLayout> layout_at(const fs::path& root) {
    std::error_code ec;
    if (root.empty())
        return std::nullopt;
    DataLayout layout;
    layout.root = fs::weakly_canonical(root, ec);
    if (ec)
        layout.root = root;
    if (fs::is_regular_file(root / "abi/include/pkbw/solution.h", ec)) {
        layout.include_dirs = {layout.root / "abi/include", layout.root / "core/include",
                               layout.root / "toolkit/include"};
        layout.abi_headers = {layout.root / "abi/include/pkbw/solution.h",
                              layout.root / "abi/include/pkbw/dtype_enum.h",
                              layout.root / "core/include/pkbw/core/dtype.h"};
        for (const auto& header : files_under(layout.root / "toolkit/include/pkbw/toolkit"))
            layout.abi_headers.push_back(header);
    } else if (fs::is_regular_file(root / "include/pkbw/solution.h", ec)) {
        layout.installed = true;
        layout.include_dirs = {layout.root / "include"};
        layout.abi_headers = {layout.root / "include/pkbw/solution.h",
                              layout.root / "include/pkbw/dtype_enum.h",
                              layout.root / "include/pkbw/core/dtype.h"};
        for (const auto& header : files_under(layout.root / "include/pkbw/toolkit"))
            layout.abi_headers.push_back(header);
    } else {
        return std::nullopt;
    }
    // Host solutions may include core's dtype helpers and references the toolkit; an install without
    // them is still usable.
    std::erase_if(layout.abi_headers, [](const fs::path& header) { return !fs::exists(header); });
    return layout;
}

std::optional<DataLayout> locate_data(const std::optional<fs::path>& data_dir_env, const fs::path& exe_dir,
                                      const fs::path& compiled_root, std::vector<fs::path>* tried) {
    std::vector<fs::path> candidates;
    if (data_dir_env && !data_dir_env->empty())
        candidates.push_back(*data_dir_env);
    candidates.push_back(exe_dir / ".." / "share" / "pkbw");
    if (!compiled_root.empty())
        candidates.push_back(compiled_root);
    candidates.push_back(exe_dir / ".." / "..");
    for (const auto& candidate : candidates) {
        if (tried)
            tried->push_back(candidate);
        if (auto layout = layout_at(candidate))
            return layout;
    }
    return std::nullopt;
}

fs::path executable_dir() {
    std::error_code ec;
    fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    return ec ? fs::current_path() : exe.parent_path();
}

DataLayout locate_data() {
    std::optional<fs::path> env;
    if (const char* value = std::getenv("PKBW_DATA_DIR"))
        env = fs::path(value);
    std::vector<fs::path> tried;
    if (auto layout = locate_data(env, executable_dir(), fs::path(PKBW_SOURCE_ROOT), &tried))
        return *layout;
    std::string message = "cannot find pkbw's data files (pkbw/solution.h); tried:";
    for (const auto& path : tried)
        message += " " + path.string();
    throw Error(message + " (set PKBW_DATA_DIR)");
}

} // namespace pkbw::cli
