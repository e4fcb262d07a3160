#include "pkbw/core/timing_checks.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace pkbw {
namespace {

std::string format(const char* pattern, double a, double b) {
    char text[320];
    std::snprintf(text, sizeof text, pattern, a, b);
    return text;
}

std::string mib(std::size_t bytes) {
    char text[32];
    std::snprintf(text, sizeof text, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
    return text;
}

} // namespace

CheckedTimingPlan plan_checked_timing(std::size_t input_bytes, std::size_t output_bytes,
                                      std::size_t memory_budget, int requested, int pairs, int graph_pairs) {
    CheckedTimingPlan plan;
    plan.pairs = std::max(pairs, 1);
    plan.graph_pairs = std::max(graph_pairs, 0);
    int calls = std::clamp(requested, 1, kMaxCallsPerBlock);
    plan.reason =
        std::to_string(calls) + " calls asked for" +
        (requested > kMaxCallsPerBlock ? " (at most " + std::to_string(kMaxCallsPerBlock) + ")" : "");
    // Per call: its fresh input set for each pair and the warm-up, its input slot, two output slots.
    const std::size_t per_call =
        (static_cast<std::size_t>(plan.groups()) + 2) * input_bytes + 2 * output_bytes;
    if (per_call > 0 && memory_budget > 0 && static_cast<std::size_t>(calls) * per_call > memory_budget) {
        const int fit = static_cast<int>(std::max<std::size_t>(memory_budget / per_call, 1));
        plan.reason = "lowered to " + std::to_string(fit) + " so that staging and slots fit " +
                      mib(memory_budget) + " (" + mib(per_call) + " per call)";
        calls = fit;
    }
    plan.calls_per_block = calls;
    plan.staging_bytes = (static_cast<std::size_t>(plan.groups()) + 1) * calls * input_bytes;
    plan.slot_bytes = static_cast<std::size_t>(calls) * (input_bytes + 2 * output_bytes);
    plan.memory_budget = memory_budget;
    return plan;
}

GraphPasses plan_graph_passes(double call_ms, int calls, std::size_t pass_bytes, std::size_t memory_left) {
    GraphPasses planned;
    const double block_ms = call_ms * std::max(calls, 1);
    if (!(block_ms > 0) || block_ms >= kGraphBlockTargetMs) {
        char text[160];
        std::snprintf(text, sizeof text, "one pass: a block of %d calls takes %.3f ms of device time", calls,
                      block_ms);
        planned.reason = text;
        return planned;
    }
    const int wanted = std::min(static_cast<int>(std::ceil(kGraphBlockTargetMs / block_ms)), kMaxGraphPasses);
    const std::size_t fit = pass_bytes == 0 ? static_cast<std::size_t>(wanted) : memory_left / pass_bytes;
    planned.passes = static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(wanted), fit));
    char text[240];
    if (planned.passes < 2) {
        planned.passes = 1;
        std::snprintf(text, sizeof text, "one pass: memory left (%s) holds fewer than two passes of %s",
                      mib(memory_left).c_str(), mib(pass_bytes).c_str());
    } else if (planned.passes < wanted) {
        std::snprintf(text, sizeof text, "%d passes (%d wanted for %.0f ms a block; memory left holds %d)",
                      planned.passes, wanted, kGraphBlockTargetMs, planned.passes);
    } else {
        std::snprintf(text, sizeof text,
                      "%d passes: a pass of %d calls takes %.3f ms of device time, a block "
                      "%.1f ms",
                      planned.passes, calls, block_ms, block_ms * planned.passes);
    }
    planned.reason = text;
    return planned;
}

double judge_call_ms(double judge_ms, double round_trip_ms, int calls) {
    if (calls <= 0) {
        return 0;
    }
    return std::max(judge_ms - round_trip_ms, 0.0) / calls;
}

std::optional<std::string> samples_disagree(const std::vector<ReportedBlock>& blocks) {
    if (blocks.empty()) {
        return std::nullopt;
    }
    double best = -1, best_reported = 0, best_judged = 0;
    bool all_over = true;
    for (const auto& block : blocks) {
        const double judged = std::max(block.judge_ms - block.round_trip_ms, 0.0);
        const double ratio = (block.reported_span_ms + kSamplesAllowanceMs) / std::max(judged, 1e-9);
        if (ratio > best) {
            best = ratio;
            best_reported = block.reported_span_ms;
            best_judged = judged;
        }
        all_over = all_over && block.reported_span_ms > block.judge_ms + kSamplesAllowanceMs;
    }
    if (best >= kSamplesFloor && !all_over) {
        return std::nullopt;
    }
    return format("its process reported %.3f ms for a block that took %.3f ms on the judge's clock (the "
                  "best of its blocks): its per-call samples are not the block's (where the judge's clock "
                  "allows more, its time is the judge's floor)",
                  best_reported, best_judged);
}

std::optional<std::string> cpu_while_frozen(double cpu_ms) {
    if (cpu_ms <= kFrozenCpuAllowanceMs) {
        return std::nullopt;
    }
    char text[256];
    std::snprintf(text, sizeof text,
                  "its processes used %.1f ms of CPU while they were frozen for the reference's blocks: "
                  "the freeze missed a process, and the reference may have been slowed",
                  cpu_ms);
    return std::string(text);
}

std::optional<std::string> one_call_holds_the_block(const std::vector<std::vector<double>>& blocks) {
    int considered = 0, held = 0;
    double worst_share = 0;
    std::size_t worst_calls = 0;
    for (const auto& samples : blocks) {
        if (samples.size() < static_cast<std::size_t>(kOneCallMinCalls)) {
            continue;
        }
        ++considered;
        double sum = 0, largest = 0;
        for (const double sample : samples) {
            sum += std::max(sample, 0.0);
            largest = std::max(largest, sample);
        }
        if (sum > 0 && largest > kOneCallShare * sum) {
            ++held;
            if (largest / sum > worst_share) {
                worst_share = largest / sum;
                worst_calls = samples.size();
            }
        }
    }
    if (considered == 0 || 2 * held < considered) {
        return std::nullopt;
    }
    char text[320];
    std::snprintf(
        text, sizeof text,
        "in %d of %d blocks one call took most of the block by its own samples (up to %.0f%% of %zu "
        "calls): it may compute several calls' work in one, which pkbw does not check",
        held, considered, 100.0 * worst_share, worst_calls);
    return std::string(text);
}

std::optional<std::string> gpu_busy(double probe_us, double idle_probe_us, const std::string& where) {
    if (probe_us <= idle_probe_us + kGpuBusyAllowanceUs) {
        return std::nullopt;
    }
    return format("a %.0f us probe kernel took %.0f us ", idle_probe_us, probe_us) + where +
           ": another process's kernels held the GPU";
}

} // namespace pkbw
