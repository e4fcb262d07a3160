// GPU check of the candidate's sandbox (tools/gpu/checks.sh section "sandbox"): which sandbox settings
// still let a process open the CUDA device. Each variant forks, applies the settings as pkbw-rank does
// for pkbw-candidate, and calls cudaGetDeviceCount / cudaMalloc; prints one line per variant.
#include "sandbox.h"

#include <cstdio>
#include <cuda_runtime.h>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

using namespace pkbw::engine;

namespace {
void probe(const char* name, const Sandbox& sandbox) {
    int pipe_fds[2];
    if (::pipe(pipe_fds) != 0) {
        return;
    }
    const pid_t pid = ::fork();
    if (pid == 0) {
        ::close(pipe_fds[0]);
        const int applied = sandbox.apply_in_child();
        int count = -1;
        const cudaError_t status = cudaGetDeviceCount(&count);
        void* p = nullptr;
        const cudaError_t alloc = status == cudaSuccess ? cudaMalloc(&p, 1 << 20) : status;
        char line[512];
        std::snprintf(line, sizeof line, "apply=%d count=%d status=%s alloc=%s", applied, count,
                      cudaGetErrorString(status), cudaGetErrorString(alloc));
        [[maybe_unused]] auto n = ::write(pipe_fds[1], line, std::string(line).size());
        ::_exit(0);
    }
    ::close(pipe_fds[1]);
    char buffer[512] = {};
    [[maybe_unused]] auto n = ::read(pipe_fds[0], buffer, sizeof buffer - 1);
    ::waitpid(pid, nullptr, 0);
    std::printf("%-40s %s | %s\n", name, buffer, sandbox.describe().c_str());
}
} // namespace

// Arguments: extra rules for a variant, "r=PATH" (read) or "w=PATH" (write); without any, the
// standard variants.
int main(int argc, char** argv) {
    SandboxSpec spec;
    spec.read_paths = {"/usr/lib",
                       "/usr/lib64",
                       "/usr/lib32",
                       "/usr/libexec",
                       "/usr/bin",
                       "/usr/sbin",
                       "/usr/local/lib",
                       "/usr/local/cuda",
                       "/usr/local/nvidia",
                       "/usr/share/nvidia",
                       "/lib",
                       "/lib64",
                       "/lib32",
                       "/bin",
                       "/sbin",
                       "/etc",
                       "/proc",
                       "/sys",
                       "/opt/nvidia",
                       "/run/nvidia-persistenced"};
    spec.device_paths = {"/dev"};
    spec.write_paths = {"/tmp", "/dev/shm"};
    if (argc > 1) {
        std::string name;
        for (int i = 1; i < argc; ++i) {
            const std::string arg = argv[i];
            if (arg == "self") {
                spec.own_proc_writable = true;
            } else {
                (arg.rfind("w=", 0) == 0 ? spec.write_paths : spec.read_paths).push_back(arg.substr(2));
            }
            name += arg + " ";
        }
        probe(name.c_str(), Sandbox::prepare(spec));
        return 0;
    }
    probe("limits and capabilities only", Sandbox::limits_only(spec, "probe"));
    probe("pkbw-candidate's rules", Sandbox::prepare(spec));
    return 0;
}
