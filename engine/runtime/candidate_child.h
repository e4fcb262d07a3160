// The candidate's process as it starts: the environment it is given and the sandbox it runs in
// (docs/sandbox.md). Built by the judge before the fork; internal to engine/runtime.
#pragma once

#include "candidate_process.h"
#include "sandbox.h"

#include <string>
#include <vector>

namespace pkbw::engine::candidate_child {

// The descriptor numbers the child finds its channel and (rank 0) its rendezvous socket at.
inline constexpr int kChannelFd = 3;
inline constexpr int kListenFd = 4; // CandidateLaunch::rendezvous_listen_fd

// The candidate's environment is built, not inherited: nothing of the judge's (its control pipe's
// number, the judges' rendezvous token, the launcher's pid) reaches it. What CUDA, NCCL and the
// dynamic loader need passes through.
std::vector<std::string> environment(const CandidateLaunch& launch, const std::string& directory);

// What the candidate may read: the system's libraries and configuration, the devices, its own
// program; never the user's home (store, compile cache), the run directories or pkbw's sources.
SandboxSpec sandbox(const CandidateLaunch& launch, const std::string& directory);

} // namespace pkbw::engine::candidate_child
