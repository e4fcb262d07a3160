// pkbw-sandbox: runs a program in the sandbox pkbw's native candidates run in (engine/runtime/sandbox.h:
// Landlock, signals scoped, no new privileges, no capabilities, clone3 refused, limits), with the
// paths the caller names. PKB's Python judge starts each candidate's process (and the reference's
// timing worker) through it: `pkbw-sandbox --read DIR --write DIR ... -- python3 pkbw_pkb_candidate.py
// --channel-fd N`. It applies the sandbox to itself and execs the program, which keeps every inherited
// descriptor (the channel) and the environment it was given.
//
// `--describe` prints, instead of running anything, one JSON line: {"landlock_abi": N, "sandbox":
// "<what it enforces, or why it cannot>"}, the line the run's report carries.
#include "pkbw/core/error.h"
#include "sandbox.h"

#include <cerrno>
#include <cstring>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

constexpr int kExitUsage = 2;
constexpr int kExitCannotSandbox = 125; // as env(1) and the judges: the wrapper itself failed
constexpr int kExitCannotExec = 127;

int usage(const std::string& problem) {
    std::cerr << "pkbw-sandbox: " << problem << "\n"
              << "usage: pkbw-sandbox [--read DIR]... [--write DIR]... [--describe] -- PROGRAM [ARGS...]\n"
              << "  --read DIR   DIR may be read and executed (besides the system's libraries and /etc)\n"
              << "  --write DIR  DIR may be read, written, created in and removed from\n"
              << "  --describe   print what the sandbox enforces as one JSON line, run nothing\n";
    return kExitUsage;
}

} // namespace

int main(int argc, char** argv) {
    pkbw::engine::SandboxSpec spec = pkbw::engine::base_sandbox_spec();
    bool describe = false;
    int program = -1;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "--") {
            program = i + 1;
            break;
        }
        if (arg == "--describe") {
            describe = true;
        } else if ((arg == "--read" || arg == "--write") && i + 1 < argc) {
            const std::string path = argv[++i];
            if (path.empty() || path.front() != '/') {
                return usage(arg + " " + path + ": give an absolute path");
            }
            (arg == "--read" ? spec.read_paths : spec.write_paths).push_back(path);
        } else {
            return usage("unknown or incomplete argument '" + arg + "'");
        }
    }
    if (!describe && (program < 0 || program >= argc)) {
        return usage("no program to run after --");
    }
    try {
        const pkbw::engine::Sandbox sandbox = pkbw::engine::Sandbox::prepare(spec);
        if (describe) {
            std::cout << nlohmann::json{{"landlock_abi", sandbox.landlock_abi()},
                                        {"sandbox", sandbox.describe()}}
                             .dump()
                      << std::endl;
            return 0;
        }
        if (const int code = sandbox.apply_in_child(); code != 0) {
            std::cerr << "pkbw-sandbox: cannot apply the sandbox: " << std::strerror(code) << "\n";
            return kExitCannotSandbox;
        }
    } catch (const std::exception& error) {
        std::cerr << "pkbw-sandbox: " << error.what() << "\n";
        return kExitCannotSandbox;
    }
    ::execvp(argv[program], argv + program);
    std::cerr << "pkbw-sandbox: cannot run " << argv[program] << ": " << std::strerror(errno) << "\n";
    return kExitCannotExec;
}
