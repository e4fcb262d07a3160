#include "candidate_child.h"

#include "pkbw/core/rank_environment.h"
#include "pkbw/tracer_control.h"

#include <cstdlib>
#include <filesystem>

extern char** environ;

namespace pkbw::engine::candidate_child {
namespace {

bool starts_with(const std::string& text, const char* prefix) {
    return text.rfind(prefix, 0) == 0;
}

} // namespace

std::vector<std::string> environment(const CandidateLaunch& launch, const std::string& directory) {
    std::vector<std::string> env;
    for (char** e = environ; *e; ++e) {
        const std::string entry = *e;
        const std::string name = entry.substr(0, entry.find('='));
        const bool tracing_variable = name == "CUDA_INJECTION64_PATH" || name == "NVTX_INJECTION64_PATH" ||
                                      name == tracer::kTraceDeferredVariable;
        if (name == "PATH" || name == "LANG" || name == "LC_ALL" || name == "LD_LIBRARY_PATH" ||
            name == "OMP_NUM_THREADS" || starts_with(name, "NCCL_") || starts_with(name, "NVIDIA_") ||
            (starts_with(name, "CUDA_") && !tracing_variable) ||
            (tracing_variable && !launch.trace_dir.empty())) {
            env.push_back(entry);
        }
    }
    env.push_back("HOME=" + directory);
    env.push_back("TMPDIR=" + directory);
    env.push_back("RANK=" + std::to_string(launch.rank));
    env.push_back("WORLD_SIZE=" + std::to_string(launch.world_size));
    env.push_back("LOCAL_RANK=" + std::to_string(launch.local_rank));
    env.push_back("MASTER_ADDR=" + launch.rendezvous_address);
    env.push_back(std::string(rank_environment::kEnvRendezvousPort) + "=" +
                  std::to_string(launch.rendezvous_port));
    env.push_back(std::string(rank_environment::kEnvRendezvousToken) + "=" + launch.rendezvous_token);
    if (launch.rendezvous_listen_fd >= 0) {
        env.push_back(std::string(rank_environment::kEnvRendezvousListenFd) + "=" +
                      std::to_string(kListenFd));
    }
    if (!launch.trace_dir.empty()) {
        env.push_back(std::string(tracer::kTraceDirVariable) + "=" + launch.trace_dir);
    }
    return env;
}

SandboxSpec sandbox(const CandidateLaunch& launch, const std::string& directory) {
    SandboxSpec spec = base_sandbox_spec();
    spec.read_paths.push_back(std::filesystem::path(launch.program).parent_path().string());
    if (const char* tracer = std::getenv("CUDA_INJECTION64_PATH"); tracer && !launch.trace_dir.empty()) {
        spec.read_paths.push_back(std::filesystem::path(tracer).parent_path().string());
    }
    if (const char* nvtx = std::getenv("NVTX_INJECTION64_PATH"); nvtx && !launch.trace_dir.empty()) {
        spec.read_paths.push_back(std::filesystem::path(nvtx).parent_path().string());
    }
    spec.write_paths.insert(spec.write_paths.begin(), directory);
    if (!launch.trace_dir.empty()) {
        spec.write_paths.push_back(launch.trace_dir);
    }
    return spec;
}

} // namespace pkbw::engine::candidate_child
