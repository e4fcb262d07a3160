// Where pkbw's run-time data lives: the solution ABI headers candidates compile against and the
// problems' reference sources. Found at run time so that a build tree, an install and a relocated
// copy all work.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace pkbw::cli {

struct DataLayout {
    std::filesystem::path root;                      // the data root that matched
    bool installed = false;                          // <root>/include layout rather than the source tree
    std::vector<std::filesystem::path> include_dirs; // -I directories for solutions, in order
    std::vector<std::filesystem::path> abi_headers;  // the headers a solution sees (hashed into cache keys)
    // The folder of problem `folder` ("problems/2_allgather", see problems/registry.h).
    std::filesystem::path problem_dir(const std::string& folder) const { return root / folder; }
};

// The layout `root` holds, or nullopt: the source layout has abi/include/pkbw/solution.h, the
// installed one include/pkbw/solution.h.
std::optional<DataLayout> layout_at(const std::filesystem::path& root);

// Tries, in order: `data_dir_env` ($PKBW_DATA_DIR), <exe_dir>/../share/pkbw, `compiled_root` (the
// source tree this binary was built from), <exe_dir>/../..; the first that holds a layout wins.
// `tried` receives every candidate path, for the error message.
std::optional<DataLayout> locate_data(const std::optional<std::filesystem::path>& data_dir_env,
                                      const std::filesystem::path& exe_dir,
                                      const std::filesystem::path& compiled_root,
                                      std::vector<std::filesystem::path>* tried = nullptr);

// The same with this process's values; throws pkbw::Error listing the paths tried.
DataLayout locate_data();

// Directory of the running executable (/proc/self/exe).
std::filesystem::path executable_dir();

} // namespace pkbw::cli
