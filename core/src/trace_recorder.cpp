#include "pkbw/core/error.h"
#include "pkbw/core/trace.h"

#include <cerrno>
#include <cstring>
#include <ctime>
#include <sys/syscall.h>
#include <unistd.h>

namespace pkbw {
namespace {

std::int64_t current_thread() {
    return static_cast<std::int64_t>(::syscall(SYS_gettid));
}

} // namespace

std::int64_t trace_now_ns() {
    timespec ts{};
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

TraceRecorder::TraceRecorder(const std::filesystem::path& path, int rank, std::string source)
    : path_(path) {
    file_ = std::fopen(path.c_str(), "wb");
    if (!file_) {
        throw Error(path.string() + ": cannot open trace file for writing: " + std::strerror(errno));
    }
    // Line-buffered: a rank killed by the watchdog keeps every range it finished. Tracing runs are
    // separate from timing runs, so a write per event costs nothing that is measured.
    std::setvbuf(file_, nullptr, _IOLBF, 1 << 16);
    write_locked(trace_header_json(rank, ::getpid(), source));
}

TraceRecorder::~TraceRecorder() {
    std::lock_guard lock(mutex_);
    const auto now = trace_now_ns();
    try {
        for (auto& [thread, stack] : open_) {
            while (!stack.empty()) {
                Open open = std::move(stack.back());
                stack.pop_back();
                close_locked(std::move(open), thread, now, true);
            }
        }
        write_locked({{"end", true}, {"events", events_}, {"dropped_records", 0}});
    } catch (const Error&) {
        // Without the end line the reader marks the trace incomplete, which is the truth.
    }
    std::fclose(file_);
}

void TraceRecorder::write_locked(const nlohmann::json& line) {
    const std::string text = line.dump() + '\n';
    // A failed write would lose data silently and leave a file that fails validation later; say so now.
    if (std::fwrite(text.data(), 1, text.size(), file_) != text.size()) {
        throw Error(path_.string() + ": trace write failed: " + std::strerror(errno));
    }
}

void TraceRecorder::close_locked(Open open, std::int64_t thread, std::int64_t end_ns, bool unterminated) {
    TraceEvent e;
    e.kind = TraceEventKind::EngineRange;
    e.name = std::move(open.name);
    e.category = std::move(open.category);
    e.start_ns = open.start_ns;
    e.end_ns = end_ns;
    e.thread = thread;
    e.domain = "pkbw";
    e.payload = std::move(open.payload);
    if (unterminated) {
        if (!e.payload.is_object()) {
            e.payload = e.payload.is_null() ? nlohmann::json::object() : nlohmann::json{{"value", e.payload}};
        }
        e.payload["unterminated"] = true;
    }
    write_locked(to_json(e));
    ++events_;
}

void TraceRecorder::begin_range(std::string_view category, std::string_view name, nlohmann::json payload) {
    const auto now = trace_now_ns();
    std::lock_guard lock(mutex_);
    open_[current_thread()].push_back({std::string(category), std::string(name), std::move(payload), now});
}

void TraceRecorder::end_range() {
    const auto now = trace_now_ns();
    const auto thread = current_thread();
    std::lock_guard lock(mutex_);
    auto it = open_.find(thread);
    if (it == open_.end() || it->second.empty()) {
        throw Error(path_.string() + ": end_range on thread " + std::to_string(thread) +
                    " without an open range");
    }
    Open open = std::move(it->second.back());
    it->second.pop_back();
    close_locked(std::move(open), thread, now, false);
}

void TraceRecorder::mark(std::string_view category, std::string_view name, nlohmann::json payload) {
    TraceEvent e;
    e.kind = TraceEventKind::NvtxMark;
    e.name = std::string(name);
    e.category = std::string(category);
    e.start_ns = e.end_ns = trace_now_ns();
    e.thread = current_thread();
    e.domain = "pkbw";
    e.payload = std::move(payload);
    std::lock_guard lock(mutex_);
    write_locked(to_json(e));
    ++events_;
}

void TraceRecorder::flush() {
    std::lock_guard lock(mutex_);
    std::fflush(file_);
}

std::size_t TraceRecorder::events_written() const {
    std::lock_guard lock(mutex_);
    return events_;
}

TraceRecorder::Scope::Scope(TraceRecorder* recorder, std::string_view category, std::string_view name,
                            nlohmann::json payload)
    : recorder_(recorder) {
    if (recorder_) {
        recorder_->begin_range(category, name, std::move(payload));
    }
}

TraceRecorder::Scope::~Scope() {
    if (recorder_) {
        try {
            recorder_->end_range();
        } catch (const Error&) {
            // A failed trace write must not take the rank down from a destructor; the end line's count
            // will be short, which the reader reports.
        }
    }
}

} // namespace pkbw
