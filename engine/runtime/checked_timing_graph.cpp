#include "candidate_process.h"
#include "checked_timing_steps.h"
#include "pkbw/core/candidate_protocol.h"
#include "rendezvous.h"
#include "timing_inputs.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
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
        const bool captured = side->worker->process->capture_graph(views_of(*side), params, failure);
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

double CheckedTiming::reference_graph_call_ms() {
    load_group(warm_group(), reference_);
    const auto params = p_.problem->params(inputs_->config(warm_group() * plan_.calls_per_block));
    double ignored = 0;
    const BlockTiming timing = timed_request(reference_, views_of(reference_), params, ignored, true);
    return timing.calls > 0 ? timing.span_ms / timing.calls : 0;
}

GraphPasses CheckedTiming::agree_graph_passes(double call_ms) {
    const std::size_t pass_bytes = static_cast<std::size_t>(plan_.calls_per_block) *
                                   (inputs_layout_.set_bytes + 2 * outputs_layout_.set_bytes);
    const std::size_t used = plan_.staging_bytes + plan_.slot_bytes;
    const std::size_t left = plan_.memory_budget > used ? plan_.memory_budget - used : 0;
    GraphPasses mine = plan_graph_passes(call_ms, plan_.calls_per_block, pass_bytes, left);
    const std::int32_t passes = mine.passes;
    const auto all = p_.rendezvous.all_gather(std::as_bytes(std::span(&passes, 1)));
    for (std::size_t r = 0; r < all.size(); ++r) {
        std::int32_t theirs = 1;
        std::memcpy(&theirs, all[r].data(), std::min(all[r].size(), sizeof theirs));
        if (theirs < mine.passes) {
            mine.passes = std::max(theirs, 1);
            mine.reason = std::to_string(mine.passes) + " passes, as rank " + std::to_string(r) + " planned";
        }
    }
    return mine;
}

void CheckedTiming::add_graph_slots(int passes) {
    const int calls = passes * plan_.calls_per_block;
    graph_inputs_ =
        std::make_unique<SharedSlots>(c_.shared, inputs_layout_.set_bytes * static_cast<std::size_t>(calls),
                                      launch_pad(placement_seed(), p_.rank, 3));
    const std::size_t outputs = outputs_layout_.set_bytes * static_cast<std::size_t>(calls);
    graph_outputs_ =
        std::make_unique<SharedSlots>(c_.shared, outputs, launch_pad(placement_seed(), p_.rank, 4));
    graph_kept_ = std::make_unique<DeviceMemory>(p_.device, outputs);
    for (Side* side : {&reference_, &candidate_}) {
        side->still->thaw();
        for (int k = 0; k < calls; ++k) {
            side->graph_views.push_back(side->worker->process->define_views(
                inputs_layout_.views(graph_inputs_->data(), k),
                outputs_layout_.views(graph_outputs_->data(), k),
                nullptr)); // no graph where an output's length varies (capture_graphs)
        }
        side->still->freeze();
    }
    graph_passes_ = passes;
}

void CheckedTiming::run_graph_series(const std::array<Side*, 2>& warm_order) {
    if (plan_.graph_pairs <= 0 || p_.device.on_host()) {
        return;
    }
    in_graph_ = true;
    auto unavailable = [&](const std::string& why) {
        p_.events.send({{"event", protocol::kPerfResult},
                        {"rank", p_.rank},
                        {"protocol", "graph"},
                        {"side", "candidate"},
                        {"unavailable", why}});
    };
    if (const std::string why = capture_graphs(); !why.empty()) {
        unavailable(why);
        return;
    }
    // Microsecond calls get longer blocks (passes over the block's sets, each on copies of its own): the
    // reference's replay of one pass says how long a pass takes.
    const GraphPasses passes = agree_graph_passes(reference_graph_call_ms());
    graph_passes_reason_ = passes.reason;
    if (passes.passes > 1) {
        add_graph_slots(passes.passes);
        if (const std::string why = capture_graphs(); !why.empty()) {
            unavailable(why);
            return;
        }
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
