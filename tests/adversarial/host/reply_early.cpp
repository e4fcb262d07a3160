// Adversarial candidate: answers the judge itself. The worker's channel to the judge is descriptor 3 of
// its process (a SOCK_SEQPACKET socket, one JSON message a packet). It learns from the warm-up which call
// starts a block and how many calls a block has; at the start of each later block it writes one element
// of every output slot (so that no slot is untouched when the judge looks), sends the judge a well-formed
// timed_calls reply with K samples of zero, and only then computes the calls. The judge's clock stops at
// that reply; the worker's own reply follows later and is read as the answer to the next request.
// Expected: invalid_timing: the judge freezes the tree right after the reply, so the block's outputs are
// unwritten when the pair is checked (and a stale reply finds the next block's slots untouched). Which
// check names it first (slots untouched at the reply, outputs changed after it, a call's output failing
// its check) depends on how fast its late work runs: cases.json accepts any of the three.
#include "pkbw/solution.h"

#include <cstdio>
#include <cstring>
#include <string>
#include <sys/socket.h>

namespace {

const char *prev_in = nullptr, *prev_out = nullptr, *run_start = nullptr, *block_start = nullptr;
int run_length = 0, block_calls = 0;

void fake_reply(int calls) {
    std::string text = "{\"calls\":" + std::to_string(calls) + ",\"msg\":\"timed_calls\",\"ok\":true,\"samples_ms\":[";
    for (int k = 0; k < calls; ++k) {
        text += k ? ",0.0" : "0.0";
    }
    text += "],\"span_ms\":0.0}";
    send(3, text.data(), text.size(), MSG_NOSIGNAL);
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& in = ctx.input(0);
    const pkbw::TensorView& out = ctx.output(0);
    const std::size_t set_in = (in.nbytes() + 255) / 256 * 256, set_out = (out.nbytes() + 255) / 256 * 256;
    const char* ip = static_cast<const char*>(in.data);
    char* op = static_cast<char*>(out.data);
    if (prev_in != nullptr && ip == prev_in + set_in && op == prev_out + set_out) {
        ++run_length;
    } else {
        run_start = ip;
        run_length = 1;
    }
    prev_in = ip;
    prev_out = op;
    if (run_length == 1 && ip == block_start && block_calls > 1) {
        for (int k = 0; k < block_calls; ++k) {
            std::memset(op + set_out * k, 0, sizeof(float));
        }
        fake_reply(block_calls);
    }
    const pkbw::SymmetricMemory sym = ctx.symmetric("early", in.nbytes());
    std::memcpy(sym.local, in.data, in.nbytes());
    ctx.barrier();
    float* dst = out.as<float>();
    for (std::int64_t i = 0; i < in.numel(); ++i) {
        float sum = 0.f;
        for (int r = 0; r < ctx.world_size; ++r) {
            sum += static_cast<const float*>(sym.peers[r])[i];
        }
        dst[i] = sum;
    }
    ctx.barrier();
    if (run_length > block_calls && run_length > 1) {
        block_start = run_start; // the warm-up block taught the layout
        block_calls = run_length;
    }
    return 0;
}
