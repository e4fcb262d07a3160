#include "worker_stillness.h"

#include <chrono>
#include <thread>

namespace pkbw::engine {

namespace {
constexpr int kFreezeTimeoutMs = 5000; // a tree that takes longer to stop is reported, not waited for
} // namespace

WorkerStillness::WorkerStillness(TimedWorker* worker)
    : worker_(worker) {
    freeze();
}

WorkerStillness::~WorkerStillness() {
    if (worker_ && frozen_) {
        worker_->process->thaw(kFreezeTimeoutMs);
    }
}

void WorkerStillness::freeze() {
    if (worker_ && !frozen_) {
        frozen_ = worker_->process->freeze(kFreezeTimeoutMs);
        failures_ += frozen_ ? 0 : 1;
    }
}

void WorkerStillness::thaw(bool confirm) {
    if (worker_ && frozen_) {
        worker_->process->thaw(confirm ? kFreezeTimeoutMs : 0);
        frozen_ = false;
    }
}

double WorkerStillness::tree_cpu_ms() const {
    return worker_ ? worker_->process->tree_cpu_ms() : 0.0;
}

double WorkerStillness::settled_cpu_ms() const {
    double last = tree_cpu_ms();
    for (int i = 0; i < 20; ++i) {
        std::this_thread::sleep_for(std::chrono::microseconds(500));
        const double now = tree_cpu_ms();
        if (now == last) {
            break;
        }
        last = now;
    }
    return last;
}

} // namespace pkbw::engine
