#include "subprocess.h"

#include "fd.h"
#include "signals.h"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace pkbw::cli {

std::vector<std::string> current_environment(const std::vector<std::string>& unset,
                                             const std::map<std::string, std::string>& set) {
    std::vector<std::string> out;
    for (char** entry = environ; entry && *entry; ++entry) {
        std::string text = *entry;
        std::string name = text.substr(0, text.find('='));
        bool drop = set.count(name) > 0;
        for (const auto& u : unset)
            drop = drop || u == name;
        if (!drop)
            out.push_back(std::move(text));
    }
    for (const auto& [name, value] : set)
        out.push_back(name + "=" + value);
    return out;
}

ProcessResult run_process(const std::vector<std::string>& argv, const std::vector<std::string>& environment,
                          double timeout_s, std::size_t max_output, const OutputSink& on_output) {
    using Clock = std::chrono::steady_clock;
    ProcessResult result;
    auto start = Clock::now();
    Pipe output = make_pipe("the output of " + argv.at(0));
    Pipe exec_error = make_pipe("exec status");

    std::vector<char*> args, env;
    for (const auto& a : argv)
        args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    for (const auto& e : environment)
        env.push_back(const_cast<char*>(e.c_str()));
    env.push_back(nullptr);

    pid_t pid = ::fork();
    if (pid < 0) {
        result.output = std::string("fork failed: ") + std::strerror(errno);
        return result;
    }
    if (pid == 0) {
        ::setpgid(0, 0);
        sigset_t none;
        sigemptyset(&none);
        ::sigprocmask(SIG_SETMASK, &none, nullptr);
        ::signal(SIGPIPE, SIG_DFL);
        int devnull = ::open("/dev/null", O_RDONLY);
        if (devnull >= 0)
            ::dup2(devnull, 0);
        ::dup2(output.write.get(), 1);
        ::dup2(output.write.get(), 2);
        ::execvpe(args[0], args.data(), env.data());
        int err = errno;
        [[maybe_unused]] auto n = ::write(exec_error.write.get(), &err, sizeof err);
        ::_exit(127);
    }
    ::setpgid(pid, pid);
    output.write.reset();
    exec_error.write.reset();

    int exec_errno = 0;
    if (::read(exec_error.read.get(), &exec_errno, sizeof exec_errno) == sizeof exec_errno) {
        ::waitpid(pid, nullptr, 0);
        result.output = "cannot run " + argv[0] + ": " + std::strerror(exec_errno);
        return result;
    }
    result.started = true;

    bool killed = false;
    bool eof = false;
    char buffer[65536];
    while (!eof) {
        double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
        if (!killed && (elapsed > timeout_s || interrupt_signal() != 0)) {
            result.timed_out = elapsed > timeout_s;
            result.interrupted = !result.timed_out;
            ::kill(-pid, SIGKILL);
            killed = true;
        }
        pollfd fds[2] = {{output.read.get(), POLLIN, 0}, {signal_pipe_fd(), POLLIN, 0}};
        int wait_ms = killed ? 1000 : static_cast<int>(std::max(1.0, (timeout_s - elapsed) * 1000));
        int n = ::poll(fds, fds[1].fd >= 0 ? 2 : 1, std::min(wait_ms, 1000));
        if (n < 0 && errno != EINTR)
            break;
        if (fds[1].fd >= 0 && (fds[1].revents & POLLIN))
            drain_signal_pipe();
        if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
            ssize_t got = ::read(output.read.get(), buffer, sizeof buffer);
            if (got <= 0) {
                eof = got == 0 || (errno != EINTR && errno != EAGAIN);
            } else {
                if (on_output)
                    on_output(std::string_view(buffer, static_cast<std::size_t>(got)));
                if (result.output.size() < max_output)
                    result.output.append(buffer,
                                         std::min<std::size_t>(got, max_output - result.output.size()));
            }
        }
        if (killed && n == 0)
            break; // a grandchild outside the group holds the pipe: stop waiting for EOF
    }
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (WIFEXITED(status))
        result.exit_code = WEXITSTATUS(status);
    else if (WIFSIGNALED(status))
        result.signal = WTERMSIG(status);
    result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    return result;
}

} // namespace pkbw::cli
