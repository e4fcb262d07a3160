#include "candidate_process.h"
#include "checked_timing_steps.h"
#include "pkbw/core/candidate_protocol.h"
#include "rendezvous.h"
#include "timing_inputs.h"

#include <span>

// The graph figure (docs/perf.md "The graph figure"): each side's block captured once into a CUDA graph,
// the ranks agreeing first, then ABBA pairs of replays, each pair checked as the launched ones.
namespace pkbw::engine::checked_timing_steps {

std::string CheckedTiming::capture_graphs() {
    std::string why;
    if (reference_.lengths || candidate_.lengths) {
        why = "the problem has variable-length outputs, whose lengths each call sets from the host, which a "
              "graph "
              "does not replay";
    }
    const auto params = p_.problem->params(inputs_->config(warm_group() * plan_.calls_per_block));
    for (int group = plan_.pairs; why.empty() && group < plan_.groups(); ++group) {
        if (p_.problem->params(inputs_->config(group * plan_.calls_per_block)) != params) {
            why = "the problem's parameters differ between draws, and a graph replays the ones it was "
                  "captured with";
        }
    }
    for (Side* side : {&reference_, &candidate_}) {
        if (!why.empty()) {
            break;
        }
        side->still->thaw();
        std::string failure;
        // Capture only (nothing runs, no barrier): the ranks agree below before any replay.
        const bool captured = side->worker->process->capture_graph(side->views, params, failure);
        side->still->freeze();
        if (!captured) {
            why = side->worker->side + "'s calls cannot be captured in a CUDA graph: " + failure;
        }
    }
    // Every rank must replay, or none: the first rank's reason stands for all.
    const auto all = p_.rendezvous.all_gather(std::as_bytes(std::span(why.data(), why.size())));
    for (std::size_t r = 0; r < all.size(); ++r) {
        if (!all[r].empty()) {
            return "rank " + std::to_string(r) + ": " +
                   std::string(reinterpret_cast<const char*>(all[r].data()), all[r].size());
        }
    }
    return "";
}

void CheckedTiming::run_graph_series(const std::array<Side*, 2>& warm_order) {
    if (plan_.graph_pairs <= 0 || p_.device.on_host()) {
        return;
    }
    if (const std::string why = capture_graphs(); !why.empty()) {
        p_.events.send({{"event", protocol::kPerfResult},
                        {"rank", p_.rank},
                        {"protocol", "graph"},
                        {"side", "candidate"},
                        {"unavailable", why}});
        return;
    }
    for (Side* side : warm_order) {
        warm_up(*side, true);
    }
    const int first = 2 * plan_.pairs; // numbered after the launched blocks
    const auto order = block_order(plan_.graph_pairs, reference_first());
    for (std::size_t b = 0; b < order.size(); ++b) {
        const int block = first + static_cast<int>(b);
        time_block(block, order[b], true);
        if (b % 2 == 1) {
            check_pair(block / 2, order[b] == BlockSide::Candidate ? block : block - 1);
        }
    }
}

} // namespace pkbw::engine::checked_timing_steps
