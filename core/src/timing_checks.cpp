#include "pkbw/core/timing_checks.h"

#include <cstdio>

namespace pkbw {
namespace {
std::string format(const char* pattern, double a, double b) {
    char text[256];
    std::snprintf(text, sizeof text, pattern, a, b);
    return text;
}
} // namespace

std::optional<std::string> untimed_device_work(const BlockBracket& block) {
    const double untimed = block.host_ms - block.span_ms;
    if (untimed <= kUntimedAllowanceMs + kUntimedAllowanceFraction * block.span_ms) {
        return std::nullopt;
    }
    return format("its timed calls took %.3f ms by a device-wide synchronisation but %.3f ms on the "
                  "timed stream: device work ran outside the measured stream",
                  block.host_ms, block.span_ms);
}

std::optional<std::string> work_after_return(double idle_cpu_ms, double window_ms) {
    if (idle_cpu_ms <= kIdleCpuAllowanceMs + kIdleCpuAllowanceFraction * window_ms) {
        return std::nullopt;
    }
    return format("its process used %.1f ms of CPU in the %.0f ms after its calls had returned: work "
                  "left running on host threads",
                  idle_cpu_ms, window_ms);
}

std::optional<std::string> judge_clock_disagrees(double judge_ms, double host_ms) {
    if (judge_ms <= host_ms * (1 + kJudgeAllowanceFraction) + kJudgeAllowanceMs) {
        return std::nullopt;
    }
    return format("its timed block took %.3f ms on the judge's clock but its process reported %.3f ms: the "
                  "reported times are not the block's",
                  judge_ms, host_ms);
}

} // namespace pkbw
