// The variables of a rank's environment that are part of the run contract: what pkbw's launcher sets
// for each rank program (pkbw-rank, PKB's Python judge) and what those read. Defined once here; the
// Python judge restates them as ENV_* in engine/python/pkbw_pkb_contract.py, and
// tests/engine/test_pkb_contract_words.py fails when they drift. The tracer's own variables are in
// engine/tracer/include/pkbw/tracer_control.h.
#pragma once

#include <string_view>

namespace pkbw::rank_environment {

// The file descriptor of the control pipe the rank's events travel on (core/protocol.h).
inline constexpr std::string_view kEnvControlFd = "PKBW_CONTROL_FD";
// The launcher's pid: names the shared-memory segments and process groups a later pkbw may clean up.
inline constexpr std::string_view kEnvLauncherPid = "PKBW_LAUNCHER_PID";
// The launcher's tag for the run's shared-memory segment names.
inline constexpr std::string_view kEnvSegmentTag = "PKBW_SEGMENT_TAG";
// The rendezvous: rank 0's port, the run's token, and the listening socket rank 0 inherits.
inline constexpr std::string_view kEnvRendezvousPort = "PKBW_RDZV_PORT";
inline constexpr std::string_view kEnvRendezvousToken = "PKBW_RDZV_TOKEN";
inline constexpr std::string_view kEnvRendezvousListenFd = "PKBW_RDZV_LISTEN_FD";
// "off": the candidate's process runs without its sandbox (tests, debugging).
inline constexpr std::string_view kEnvSandbox = "PKBW_SANDBOX";
// "signals": contain the candidate's processes by process group and signals instead of a cgroup.
inline constexpr std::string_view kEnvContainment = "PKBW_CONTAINMENT";

} // namespace pkbw::rank_environment
