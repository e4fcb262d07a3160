#include "cgroup_dir.h"

#include "pkbw/core/unique_fd.h"
#include "process_scan.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <csignal>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <optional>
#include <poll.h>
#include <set>
#include <sstream>
#include <unistd.h>

namespace pkbw::engine::cgroup {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

std::string read_small(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

bool write_small(const std::string& path, const char* text) {
    UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
    const auto length = static_cast<ssize_t>(std::char_traits<char>::length(text));
    return fd && ::write(fd.get(), text, static_cast<std::size_t>(length)) == length;
}

// mountinfo writes a space as \040, a tab as \011, a newline as \012 and a backslash as \134.
std::string unescape_mount_field(const std::string& field) {
    std::string text;
    for (std::size_t i = 0; i < field.size(); ++i) {
        if (field[i] == '\\' && i + 3 < field.size() &&
            std::isdigit(static_cast<unsigned char>(field[i + 1]))) {
            text += static_cast<char>(std::stoi(field.substr(i + 1, 3), nullptr, 8));
            i += 3;
        } else {
            text += field[i];
        }
    }
    return text;
}

struct Cgroup2Mount {
    std::string point; // where it is mounted
    std::string root;  // which cgroup of the hierarchy is mounted there ("/" unless bind-mounted)
};

std::optional<Cgroup2Mount> find_cgroup2_mount() {
    // "id parent major:minor root mount-point options [optional fields] - fstype source super-options"
    std::ifstream mountinfo("/proc/self/mountinfo");
    for (std::string line; std::getline(mountinfo, line);) {
        const std::size_t separator = line.find(" - ");
        if (separator == std::string::npos) {
            continue;
        }
        std::istringstream after(line.substr(separator + 3));
        std::string fstype;
        after >> fstype;
        if (fstype != "cgroup2") {
            continue;
        }
        std::istringstream before(line.substr(0, separator));
        std::string id, parent, device, root, point;
        before >> id >> parent >> device >> root >> point;
        return Cgroup2Mount{unescape_mount_field(point), unescape_mount_field(root)};
    }
    return std::nullopt;
}

// This process's cgroup in the v2 hierarchy: /proc/self/cgroup's "0::<path>" line.
std::optional<std::string> own_cgroup() {
    std::ifstream cgroups("/proc/self/cgroup");
    for (std::string line; std::getline(cgroups, line);) {
        if (line.rfind("0::", 0) == 0) {
            return line.substr(3);
        }
    }
    return std::nullopt;
}

} // namespace

Deadline deadline_in(int timeout_ms) {
    return Clock::now() + std::chrono::milliseconds(std::max(timeout_ms, 0));
}

std::vector<std::string> container_parents(std::string& why) {
    const auto mount = find_cgroup2_mount();
    if (!mount) {
        why = "no cgroup2 mount in /proc/self/mountinfo";
        return {};
    }
    std::vector<std::string> parents;
    const auto own = own_cgroup();
    const std::string& root = mount->root;
    if (own && (root == "/" || *own == root || own->rfind(root + "/", 0) == 0)) {
        const std::string relative = root == "/" ? *own : own->substr(root.size());
        std::string path = mount->point + (relative == "/" ? "" : relative);
        std::error_code ec;
        if (fs::is_directory(path, ec)) {
            parents.push_back(path);
        }
    }
    if (parents.empty() || parents.front() != mount->point) {
        parents.push_back(mount->point);
    }
    return parents;
}

void remove_tree(const std::string& directory) {
    if (directory.empty()) {
        return;
    }
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(directory, ec)) {
        if (entry.is_directory(ec) && !entry.is_symlink(ec)) {
            remove_tree(entry.path().string());
        }
    }
    ::rmdir(directory.c_str());
}

Events Directory::events() const {
    Events events;
    char text[256];
    const ssize_t got = ::pread(events_fd, text, sizeof text - 1, 0);
    if (got <= 0) {
        return events;
    }
    text[got] = '\0';
    std::istringstream lines(text);
    std::string key;
    for (int value = 0; lines >> key >> value;) {
        events.populated = key == "populated" ? value != 0 : events.populated;
        events.frozen = key == "frozen" ? value != 0 : events.frozen;
    }
    events.read = true;
    return events;
}

bool Directory::wait_until(const std::function<bool(const Events&)>& done, Deadline deadline) const {
    for (;;) {
        const Events now = events();
        if (now.read && done(now)) {
            return true;
        }
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
        if (!now.read || left <= 0) {
            return false;
        }
        // Slices of 10 ms: a change notified before this poll began is caught by the next read.
        pollfd watch{events_fd, POLLPRI, 0};
        ::poll(&watch, 1, static_cast<int>(std::min<long long>(left, 10)));
    }
}

bool Directory::set_frozen(bool frozen, Deadline deadline) const {
    if (!write_small(path + "/cgroup.freeze", frozen ? "1" : "0")) {
        return false;
    }
    return wait_until([frozen](const Events& e) { return e.frozen == frozen; }, deadline);
}

std::vector<pid_t> Directory::pids() const {
    std::vector<pid_t> found;
    std::istringstream procs(read_small(path + "/cgroup.procs"));
    for (long pid = 0; procs >> pid;) {
        found.push_back(static_cast<pid_t>(pid));
    }
    // A candidate that may write to the cgroup file system (no Landlock) can make cgroups inside its own.
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(path, ec)) {
        if (entry.is_directory(ec) && !entry.is_symlink(ec)) {
            const auto inner = Directory{entry.path().string(), -1}.pids();
            found.insert(found.end(), inner.begin(), inner.end());
        }
    }
    return found;
}

double Directory::usage_usec() const {
    std::istringstream stat(read_small(path + "/cpu.stat"));
    std::string key;
    for (double value = 0; stat >> key >> value;) {
        if (key == "usage_usec") {
            return value;
        }
    }
    return -1000;
}

KillResult Directory::kill_all(bool has_kill_file, Deadline deadline) const {
    KillResult result;
    // Frozen first (at most half a second: a process in uninterruptible sleep delays it), so that what is
    // listed can neither exit nor fork before it is killed: the report names exactly what was killed.
    set_frozen(true, std::min(deadline, deadline_in(500)));
    std::set<pid_t> signalled;
    auto kill_members = [&] {
        std::size_t living = 0;
        for (const pid_t pid : pids()) {
            const auto process = process_scan::read(pid);
            if (!process || process->dead()) {
                continue;
            }
            ++living;
            if (signalled.insert(pid).second && ::kill(pid, SIGKILL) == 0) {
                result.signalled.push_back(process->info);
            }
        }
        return living;
    };
    result.listed = kill_members();
    if (has_kill_file) {
        // Whatever the listing missed (it was not frozen in time), and no fork into the cgroup succeeds
        // from here on.
        write_small(path + "/cgroup.kill", "1");
    }
    for (;;) {
        if (wait_until([](const Events& e) { return !e.populated; },
                       std::min(deadline, Clock::now() + std::chrono::milliseconds(20)))) {
            result.emptied = true;
            break;
        }
        if (Clock::now() >= deadline) {
            break;
        }
        kill_members(); // before Linux 5.14, or a freeze that timed out: what appeared since
    }
    write_small(path + "/cgroup.freeze", "0");
    return result;
}

} // namespace pkbw::engine::cgroup
