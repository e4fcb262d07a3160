// The judge <-> candidate channel: what a rank's judge process (pkbw-rank) and its candidate process
// (pkbw-candidate) say to each other (docs/engine.md, "Process layout"). One definition, read by both
// programs. Messages are JSON objects with a "msg" field, one per SOCK_SEQPACKET datagram, with host
// shared-memory file descriptors attached as SCM_RIGHTS where a message maps buffers.
#pragma once

#include <cstddef>
#include <string_view>

namespace pkbw::candidate_protocol {

inline constexpr int kVersion = 1;
// A datagram larger than this is refused by the receiver (a candidate must not exhaust the judge's
// memory with one message).
inline constexpr std::size_t kMaxMessageBytes = 4u << 20;
// Descriptors per datagram (the kernel's SCM_MAX_FD is 253).
inline constexpr std::size_t kMaxFdsPerMessage = 200;

// Judge -> candidate.
inline constexpr std::string_view kSetup = "setup"; // backend, rank, world, library, shm prefix, trace,
                                                    // spin (poll the channel: engine/runtime/cpu_placement.h)
inline constexpr std::string_view kMap = "map";     // buffers: [{id, bytes, ipc?}] (+ fds on host)
inline constexpr std::string_view kUnmap = "unmap"; // ids: buffers the judge is about to free
inline constexpr std::string_view kViews = "views"; // set id, inputs, outputs: tensors over buffers
inline constexpr std::string_view kCall = "call";   // one call of pkbw_solution on a view set
// PKB's timing protocol on view sets: views, params (of the inputs timed), warmup, iterations.
inline constexpr std::string_view kPkbSeries = "pkb_series";
// One of pkbw's timed blocks: views [id per call] (each call its own inputs and output slot),
// params, barrier. The worker runs the calls back to back, a device event before and after each, and
// answers after a device-wide synchronisation with samples_ms (one per call) and span_ms (first event
// to last), enqueue_ms, host_ms and worker_ms (its own times of the queueing, of the calls to the
// synchronisation and of the whole request: diagnostics); the judge times the request on its own clock
// (docs/perf.md). An empty views list is the judge's round-trip calibration.
inline constexpr std::string_view kTimedCalls = "timed_calls";
// The same block replayed from a CUDA graph (docs/perf.md "The graph figure"): views, params, barrier
// as kTimedCalls, and "capture": true to capture only. The worker captures the calls once per views and
// params (nothing runs while it captures) and replays the graph for each other request; it answers
// span_ms, calls and "graph": true (only "graph": true to a capture), or,
// where the calls cannot be captured (they synchronise, allocate, use the legacy stream; the host
// backend), "graph": false and "graph_error" saying why (ok: true: no figure, not a failure).
inline constexpr std::string_view kGraphCalls = "graph_calls";
inline constexpr std::string_view kTrace = "trace"; // the traced pass's iterations
inline constexpr std::string_view kQuit = "quit";

// Candidate -> judge: every request is answered by exactly one reply with the same "msg" and
// "ok": true, or "ok": false with "kind" and "message" (kinds below).
inline constexpr std::string_view kReady = "ready"; // after setup: pid, device, versions, threads

// Failure kinds in a reply.
inline constexpr std::string_view kFailSolution = "solution_error"; // returned non-zero: ctx.fail()
inline constexpr std::string_view kFailException = "exception";     // a C++ exception escaped
inline constexpr std::string_view kFailDevice = "device_error";     // CUDA/NCCL error: context unusable
inline constexpr std::string_view kFailProtocol = "protocol";       // a malformed request

} // namespace pkbw::candidate_protocol
