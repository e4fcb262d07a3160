// The candidate process's side of the channel (pkbw-candidate): joins the candidates' own
// rendezvous, opens its device (a blocking stream, its own NCCL communicator), loads the candidate
// library, maps the judge's buffers and serves the judge's requests until "quit"
// (core/candidate_protocol.h, docs/engine.md "Process layout").
#pragma once

namespace pkbw::engine {

class Channel;

// Returns the process's exit code (core/status.h).
int serve_candidate(Channel& channel);

} // namespace pkbw::engine
