#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <unistd.h>

namespace pkbw::test {

// A fresh directory under the build's temp area, removed at the end of the test.
class TempDir {
public:
    TempDir() {
        std::random_device rd;
        path_ = std::filesystem::temp_directory_path() /
                ("pkbw-driver-test-" + std::to_string(::getpid()) + "-" + std::to_string(rd()));
        std::filesystem::create_directories(path_);
    }
    // PKBW_TEST_KEEP=1 in the environment keeps the folder (its runs' rank logs), for a failure to read.
    ~TempDir() {
        if (const char* keep = std::getenv("PKBW_TEST_KEEP"); keep && *keep == '1')
            return;
        std::error_code ec;
        std::filesystem::remove_all(path_, ec);
    }
    const std::filesystem::path& path() const { return path_; }
    std::filesystem::path write(const std::string& name, const std::string& text) const {
        auto file = path_ / name;
        std::filesystem::create_directories(file.parent_path());
        std::ofstream(file) << text;
        return file;
    }

private:
    std::filesystem::path path_;
};

} // namespace pkbw::test
