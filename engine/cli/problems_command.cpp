#include "problems_command.h"

#include "locate.h"
#include "pkbw/core/error.h"
#include "pkbw/problems/registry.h"

#include <system_error>

namespace fs = std::filesystem;

namespace pkbw::cli {

nlohmann::json problems_json() {
    std::optional<DataLayout> layout;
    try {
        layout = locate_data();
    } catch (const Error&) {
        // No data here (a bare binary): the list still names the problems, without folders.
    }
    nlohmann::json list = nlohmann::json::array();
    for (const Problem* p : all_problems()) {
        const auto& info = p->info();
        nlohmann::json files = nlohmann::json::object();
        std::string folder;
        if (layout) {
            const fs::path dir = layout->problem_dir(problem_folder(*p));
            std::error_code ec;
            if (fs::is_directory(dir, ec)) {
                folder = dir.string();
                for (const char* name : {"reference.cu", "reference_host.cpp", "README.md"})
                    if (fs::is_regular_file(dir / name, ec))
                        files[name] = (dir / name).string();
            }
        }
        list.push_back({{"id", info.id},
                        {"stem", info.stem},
                        {"category", info.category},
                        {"title", info.title},
                        {"description", info.description},
                        {"atol", info.atol},
                        {"rtol", info.rtol},
                        {"folder", folder},
                        {"files", files}});
    }
    return list;
}

} // namespace pkbw::cli
