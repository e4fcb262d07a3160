#include "remote_side.h"

#include "rendezvous.h"

#include <algorithm>
#include <chrono>
#include <thread>

namespace pkbw::engine {
namespace {

using nlohmann::json;

// The candidate's side of a timed block: its calls run in the candidate process, which times them;
// this process measures the round trip on its own clock and, after the block, how much CPU the
// candidate process used while it should have been idle (core/timing_checks.h).
class RemoteSide final : public TimedSide {
public:
    static constexpr int kIdleWindowMs = 50;

    RemoteSide(CandidateProcess& process, Rendezvous& judges, const TimingBuffers& buffers)
        : process_(process)
        , judges_(judges) {
        for (int copy = 0; copy < buffers.copies(); ++copy) {
            views_.push_back(process_.define_views(buffers.inputs(copy), buffers.outputs()));
        }
    }
    BlockTiming pkb_series(int warmup, int iterations, json& extra) override {
        judges_.barrier(); // the judges' clocks start together, so the candidates' barrier is short
        const auto start = std::chrono::steady_clock::now();
        BlockTiming timing = process_.pkb_series(views_, warmup, iterations);
        after(timing, start, extra);
        return timing;
    }
    BlockTiming pkbw_block(int iterations, int repeat, bool flush, int& next_copy, json& extra) override {
        judges_.barrier();
        const auto start = std::chrono::steady_clock::now();
        BlockTiming timing = process_.pkbw_block(views_, iterations, repeat, flush, next_copy);
        after(timing, start, extra);
        return timing;
    }

private:
    void after(const BlockTiming& timing, std::chrono::steady_clock::time_point start, json& extra) {
        extra["judge_ms"] =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
        add_bracket(extra, timing);
        extra["whole_ms"] = timing.whole_ms;
        const double before = process_.cpu_ms();
        std::this_thread::sleep_for(std::chrono::milliseconds(kIdleWindowMs));
        const double after = process_.cpu_ms();
        if (before >= 0 && after >= 0) {
            extra["idle_cpu_ms"] = std::max(after - before, 0.0);
            extra["idle_window_ms"] = kIdleWindowMs;
        }
    }

    CandidateProcess& process_;
    Rendezvous& judges_;
    std::vector<int> views_;
};

} // namespace

std::unique_ptr<TimedSide> make_remote_side(CandidateProcess& process, Rendezvous& judges,
                                            const TimingBuffers& buffers) {
    return std::make_unique<RemoteSide>(process, judges, buffers);
}

} // namespace pkbw::engine
