#include "timing.h"

#include "rendezvous.h"

#include <chrono>
#include <numeric>

namespace pkbw::engine {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
    return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

} // namespace

BlockTiming TimedCalls::pkb_series(const CallFunction& call, int copies, int warmup, int iterations) {
    device_.synchronize();
    rendezvous_.barrier();
    for (int i = 0; i < warmup; ++i) {
        call(i % copies);
    }
    device_.synchronize();
    auto timer = device_.make_timer(iterations + 1);
    const auto start = Clock::now();
    timer->mark(0);
    for (int i = 0; i < iterations; ++i) {
        call(i % copies);
        timer->mark(i + 1);
    }
    device_.synchronize();
    BlockTiming timing;
    timing.host_ms = ms_since(start);
    timing.samples_ms = timer->elapsed_ms();
    timing.span_ms = std::accumulate(timing.samples_ms.begin(), timing.samples_ms.end(), 0.0);
    timing.calls = iterations;
    return timing;
}

BlockTiming TimedCalls::pkbw_block(const CallFunction& call, int copies, int iterations, int repeat,
                                   bool flush, int& next_copy) {
    device_.synchronize();
    rendezvous_.barrier();
    auto timer = device_.make_timer(2 * iterations);
    const auto start = Clock::now();
    for (int i = 0; i < iterations; ++i) {
        if (flush) {
            device_.flush_cache();
        }
        timer->mark(2 * i);
        for (int r = 0; r < repeat; ++r) {
            call(next_copy);
            next_copy = (next_copy + 1) % copies;
        }
        timer->mark(2 * i + 1);
    }
    device_.synchronize();
    BlockTiming timing;
    timing.host_ms = ms_since(start);
    const auto consecutive = timer->elapsed_ms();
    for (std::size_t i = 0; i < consecutive.size(); i += 2) {
        timing.samples_ms.push_back(consecutive[i] / repeat);
    }
    timing.span_ms = std::accumulate(consecutive.begin(), consecutive.end(), 0.0);
    timing.calls = iterations * repeat;
    return timing;
}

BlockTiming TimedCalls::checked_block(const CallFunction& call, int calls, bool barrier) {
    device_.synchronize();
    if (barrier) {
        rendezvous_.barrier();
    }
    BlockTiming timing;
    if (calls <= 0) {
        device_.synchronize();
        return timing;
    }
    auto timer = device_.make_timer(2 * calls);
    const auto start = Clock::now();
    for (int k = 0; k < calls; ++k) {
        timer->mark(2 * k);
        call(k);
        timer->mark(2 * k + 1);
    }
    timing.enqueue_ms = ms_since(start);
    device_.synchronize();
    timing.host_ms = ms_since(start);
    const auto consecutive = timer->elapsed_ms();
    for (std::size_t i = 0; i < consecutive.size(); i += 2) {
        timing.samples_ms.push_back(consecutive[i]);
    }
    timing.span_ms = std::accumulate(consecutive.begin(), consecutive.end(), 0.0);
    timing.calls = calls;
    return timing;
}

BlockTiming TimedCalls::graph_block(CapturedCalls& graph, int calls, bool barrier) {
    device_.synchronize();
    if (barrier) {
        rendezvous_.barrier();
    }
    auto timer = device_.make_timer(2);
    const auto start = Clock::now();
    timer->mark(0);
    graph.launch();
    timer->mark(1);
    BlockTiming timing;
    timing.enqueue_ms = ms_since(start);
    device_.synchronize();
    timing.host_ms = ms_since(start);
    timing.span_ms = timer->elapsed_ms().at(0);
    timing.calls = calls;
    return timing;
}

} // namespace pkbw::engine
