#include "process_scan.h"

#include <cerrno>
#include <cstdlib>
#include <dirent.h>
#include <fstream>
#include <iterator>
#include <map>
#include <signal.h>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

namespace pkbw::engine::process_scan {
namespace {

std::string read_text(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

// The numeric entries of a /proc directory (pids, or thread ids under task/).
std::vector<pid_t> numeric_entries(const std::string& directory) {
    std::vector<pid_t> found;
    DIR* dir = ::opendir(directory.c_str());
    if (dir == nullptr) {
        return found;
    }
    while (dirent* entry = ::readdir(dir)) {
        char* end = nullptr;
        const long value = std::strtol(entry->d_name, &end, 10);
        if (value > 0 && *end == '\0') {
            found.push_back(static_cast<pid_t>(value));
        }
    }
    ::closedir(dir);
    return found;
}

} // namespace

std::optional<Process> read(pid_t pid) {
    const std::string base = "/proc/" + std::to_string(pid);
    const std::string stat = read_text(base + "/stat");
    // "pid (comm) S ppid pgrp session ...": comm may hold spaces and parentheses, so from the last ')'.
    const std::size_t close = stat.rfind(')');
    const std::size_t open = stat.find('(');
    if (close == std::string::npos || open == std::string::npos || close + 4 >= stat.size()) {
        return std::nullopt;
    }
    Process process;
    process.info.pid = pid;
    process.state = stat[close + 2];
    std::istringstream fields(stat.substr(close + 3));
    long ppid = 0, group = 0, session = 0;
    fields >> ppid >> group >> session;
    process.info.ppid = static_cast<pid_t>(ppid);
    process.group = static_cast<pid_t>(group);
    process.session = static_cast<pid_t>(session);
    std::string cmdline = read_text(base + "/cmdline");
    for (char& c : cmdline) {
        c = c == '\0' ? ' ' : c;
    }
    while (!cmdline.empty() && cmdline.back() == ' ') {
        cmdline.pop_back();
    }
    const std::string comm = stat.substr(open + 1, close - open - 1);
    process.info.command = !cmdline.empty() ? cmdline : comm;
    // A process that renamed itself (prctl PR_SET_NAME) without exec shows its starter's command line:
    // the name it took is added ("pkbw-candidate --channel 3 [name]"). comm is the program's name cut
    // to 15 characters otherwise.
    const std::string program = cmdline.substr(0, cmdline.find(' '));
    const std::string program_name = program.substr(program.rfind('/') + 1);
    if (!cmdline.empty() && program_name.rfind(comm, 0) != 0) {
        process.info.command += " [" + comm + "]";
    }
    return process;
}

std::vector<Process> all() {
    std::vector<Process> processes;
    for (const pid_t pid : numeric_entries("/proc")) {
        if (auto process = read(pid)) {
            processes.push_back(std::move(*process));
        }
    }
    return processes;
}

std::vector<Process> below(const std::vector<Process>& processes, pid_t root, const std::set<pid_t>& skip) {
    std::map<pid_t, std::vector<const Process*>> children;
    for (const auto& process : processes) {
        if (!process.dead()) {
            children[process.info.ppid].push_back(&process);
        }
    }
    std::vector<Process> found;
    std::vector<pid_t> frontier{root};
    std::set<pid_t> seen{root};
    for (std::size_t next = 0; next < frontier.size(); ++next) {
        const pid_t parent = frontier[next];
        for (const Process* child : children[parent]) {
            if (parent == root && skip.count(child->info.pid)) {
                continue;
            }
            if (seen.insert(child->info.pid).second) {
                found.push_back(*child);
                frontier.push_back(child->info.pid);
            }
        }
    }
    return found;
}

Tree tree_below_self(const std::set<pid_t>& skip) {
    Tree tree;
    const auto processes = all();
    tree.living = below(processes, ::getpid(), skip);
    const pid_t mine = ::getsid(0);
    auto note_group = [&](const Process& process) {
        if (process.session > 0 && process.session != mine && process.group > 1) {
            tree.groups.insert(process.group);
        }
    };
    for (const auto& process : tree.living) {
        note_group(process);
    }
    for (const auto& process : processes) {
        if (process.dead() && process.info.ppid == ::getpid() && !skip.count(process.info.pid)) {
            note_group(process);
        }
    }
    return tree;
}

std::set<pid_t> signal_groups(std::set<pid_t>& groups, int signal) {
    std::set<pid_t> signalled;
    for (auto it = groups.begin(); it != groups.end();) {
        const bool sent = ::kill(-*it, signal) == 0;
        const bool empty = !sent && errno == ESRCH;
        if (sent) {
            signalled.insert(*it);
        }
        it = empty ? groups.erase(it) : std::next(it);
    }
    return signalled;
}

bool alive(pid_t pid) {
    if (pid <= 0 || (::kill(pid, 0) != 0 && errno == ESRCH)) {
        return false;
    }
    const auto process = read(pid);
    return process && !process->dead();
}

int reap_zombie_children(pid_t keep) {
    const std::string self = "/proc/" + std::to_string(::getpid());
    std::set<pid_t> children;
    bool listed = false;
    // task/<tid>/children (CONFIG_PROC_CHILDREN): short, unlike a scan of all of /proc. Adopted orphans
    // are given to any living thread of the subreaper, so every thread's list.
    for (const pid_t tid : numeric_entries(self + "/task")) {
        std::ifstream in(self + "/task/" + std::to_string(tid) + "/children");
        listed = listed || in.is_open();
        for (long pid = 0; in >> pid;) {
            children.insert(static_cast<pid_t>(pid));
        }
    }
    if (!listed) {
        for (const auto& process : all()) {
            if (process.info.ppid == ::getpid()) {
                children.insert(process.info.pid);
            }
        }
    }
    int reaped = 0;
    for (const pid_t pid : children) {
        // WNOHANG: a living child is left as it is.
        if (pid != keep && ::waitpid(pid, nullptr, WNOHANG) == pid) {
            ++reaped;
        }
    }
    return reaped;
}

} // namespace pkbw::engine::process_scan
