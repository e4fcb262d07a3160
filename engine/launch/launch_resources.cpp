// The per-run resources the launcher hands out and takes back: the rendezvous port and token, the
// host backend's shared-memory segments, the candidates' temporary directories, and the host ranks'
// default memory cap. Split from
// launcher.cpp, which owns the ranks' lives.
#include "fd.h"
#include "launcher.h"
#include "loopback.h"
#include "pkbw/core/error.h"

#include <algorithm>
#include <arpa/inet.h>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

namespace fs = std::filesystem;

namespace pkbw::cli {

std::string random_token() {
    return engine::random_hex_token();
}

int remove_shm_segments(const std::string& segment_tag, const fs::path& shm_dir) {
    if (segment_tag.empty())
        return 0;
    // The ranks name segments after PKBW_SEGMENT_TAG (engine/runtime/rank_runner.cpp).
    std::string prefix = "pkbw-" + segment_tag.substr(0, 16);
    int removed = 0;
    std::error_code ec;
    for (fs::directory_iterator it(shm_dir, ec), end; !ec && it != end; it.increment(ec)) {
        if (it->path().filename().string().rfind(prefix, 0) == 0 && fs::remove(it->path(), ec))
            ++removed;
    }
    return removed;
}

int remove_orphaned_shm_segments(const fs::path& shm_dir) {
    int removed = 0;
    std::error_code ec;
    for (fs::directory_iterator it(shm_dir, ec), end; !ec && it != end; it.increment(ec)) {
        const std::string name = it->path().filename().string();
        // pkbw-<16 hex>-p<pid>-<index>-<rank>
        if (name.size() < 24 || name.rfind("pkbw-", 0) != 0 || name.compare(21, 2, "-p") != 0)
            continue;
        const std::size_t digits_end = name.find('-', 23);
        if (digits_end == std::string::npos || digits_end == 23)
            continue;
        const std::string digits = name.substr(23, digits_end - 23);
        if (digits.find_first_not_of("0123456789") != std::string::npos || digits.size() > 9)
            continue;
        const pid_t pid = static_cast<pid_t>(std::stol(digits));
        if (pid <= 0 || ::kill(pid, 0) == 0 || errno != ESRCH)
            continue; // alive (or not ours to probe): a live launcher cleans up its own run
        if (fs::remove(it->path(), ec))
            ++removed;
    }
    return removed;
}

namespace {

// The judge's pid in a candidate directory's name, pkbw-candidate-<pid>-XXXXXX
// (engine/runtime/candidate_process.cpp); 0 for any other name.
pid_t candidate_directory_judge(const std::string& name) {
    constexpr std::string_view prefix = "pkbw-candidate-";
    constexpr std::size_t suffix = 6; // mkdtemp's XXXXXX
    if (!name.starts_with(prefix) || name.size() < prefix.size() + 2 + suffix ||
        name[name.size() - suffix - 1] != '-')
        return 0;
    const std::string digits = name.substr(prefix.size(), name.size() - suffix - 1 - prefix.size());
    if (digits.empty() || digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos)
        return 0;
    return static_cast<pid_t>(std::stol(digits));
}

// Removes temp_dir/name when it is a directory of this user (not a link: a shared /tmp).
bool remove_candidate_directory(const fs::path& path) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid())
        return false;
    std::error_code ec;
    fs::remove_all(path, ec);
    return !ec;
}

} // namespace

int remove_candidate_directories(const std::vector<int>& judges, const fs::path& temp_dir) {
    int removed = 0;
    // A candidate killed a moment ago may still be writing into its directory while it dies, so that
    // one pass leaves it behind (remove_all meets a file created after it listed the folder): a few
    // passes, 50 ms apart, until none of these judges' directories is left.
    for (int pass = 0; pass < 20; ++pass) {
        bool left = false;
        std::error_code ec;
        for (fs::directory_iterator it(temp_dir, ec), end; !ec && it != end; it.increment(ec)) {
            const int judge = candidate_directory_judge(it->path().filename().string());
            if (judge <= 0 || std::find(judges.begin(), judges.end(), judge) == judges.end())
                continue;
            if (remove_candidate_directory(it->path()))
                ++removed;
            else
                left = true;
        }
        if (!left)
            break;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return removed;
}

int remove_orphaned_candidate_directories(const fs::path& temp_dir) {
    int removed = 0;
    std::error_code ec;
    for (fs::directory_iterator it(temp_dir, ec), end; !ec && it != end; it.increment(ec)) {
        const pid_t judge = candidate_directory_judge(it->path().filename().string());
        if (judge <= 0 || ::kill(judge, 0) == 0 || errno != ESRCH)
            continue; // alive (or not ours to probe): a live judge removes its own
        if (remove_candidate_directory(it->path()))
            ++removed;
    }
    return removed;
}

std::uint64_t default_host_address_space_limit(int world_size) {
    const long pages = ::sysconf(_SC_PHYS_PAGES);
    const long page_size = ::sysconf(_SC_PAGE_SIZE);
    if (pages <= 0 || page_size <= 0)
        return 0;
    const std::uint64_t memory = static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page_size);
    const std::uint64_t share = memory / 2 / static_cast<std::uint64_t>(std::max(world_size, 1));
    return std::max<std::uint64_t>(share, 4ull << 30);
}

} // namespace pkbw::cli
