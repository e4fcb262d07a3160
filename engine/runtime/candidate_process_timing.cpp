// The candidate process's timed requests: PKB's series, pkbw's checked blocks, the graph's capture and
// replays, the traced pass (candidate_process.h). Split from candidate_process.cpp, which starts, feeds
// and ends the process.
#include "candidate_process.h"
#include "pkbw/core/candidate_protocol.h"
#include "pkbw/core/error.h"

#include <cmath>

namespace pkbw::engine {

namespace cp = candidate_protocol;
using nlohmann::json;

namespace {
// What a worker reports of a block: numbers it chose, so each must be one (finite, not negative).
BlockTiming timing_from(const json& reply) {
    auto number = [](const json& value) {
        if (!value.is_number() || !(value.get<double>() >= 0) || value.get<double>() > 1e12) {
            throw CandidateFailure(std::string(cp::kFailProtocol),
                                   "the process answered a timed request with " + value.dump().substr(0, 80) +
                                       " where a time belongs");
        }
        return value.get<double>();
    };
    BlockTiming timing;
    const json samples = reply.value("samples_ms", json());
    if (!samples.is_array()) {
        throw CandidateFailure(std::string(cp::kFailProtocol), "a timed reply without samples_ms");
    }
    for (const auto& sample : samples) {
        timing.samples_ms.push_back(number(sample));
    }
    timing.span_ms = number(reply.value("span_ms", json(0.0)));
    timing.enqueue_ms = number(reply.value("enqueue_ms", json(0.0)));
    timing.host_ms = number(reply.value("host_ms", json(0.0)));
    timing.worker_ms = number(reply.value("worker_ms", json(0.0)));
    const json calls = reply.value("calls", json(0));
    timing.calls = calls.is_number_integer() ? calls.get<int>() : -1;
    return timing;
}
} // namespace

BlockTiming CandidateProcess::pkb_series(const std::vector<int>& views,
                                         const std::map<std::string, double>& params, int warmup,
                                         int iterations) {
    const json reply = request({{"msg", cp::kPkbSeries},
                                {"views", views},
                                {"params", params},
                                {"warmup", warmup},
                                {"iterations", iterations}});
    BlockTiming timing = timing_from(reply);
    if (timing.samples_ms.size() != static_cast<std::size_t>(iterations)) {
        throw CandidateFailure(std::string(cp::kFailProtocol),
                               "the candidate process returned " + std::to_string(timing.samples_ms.size()) +
                                   " samples for " + std::to_string(iterations));
    }
    return timing;
}

BlockTiming CandidateProcess::timed_calls(const std::vector<int>& views,
                                          const std::map<std::string, double>& params, bool barrier) {
    const json reply =
        request({{"msg", cp::kTimedCalls}, {"views", views}, {"params", params}, {"barrier", barrier}});
    BlockTiming timing = timing_from(reply);
    if (timing.samples_ms.size() != views.size() || timing.calls != static_cast<int>(views.size())) {
        throw CandidateFailure(std::string(cp::kFailProtocol),
                               "the process returned " + std::to_string(timing.samples_ms.size()) +
                                   " samples for a block of " + std::to_string(views.size()) + " calls");
    }
    return timing;
}

bool CandidateProcess::capture_graph(const std::vector<int>& views,
                                     const std::map<std::string, double>& params, std::string& why) {
    const json reply =
        request({{"msg", cp::kGraphCalls}, {"views", views}, {"params", params}, {"capture", true}});
    if (reply.value("graph", false) == true) {
        return true;
    }
    const json error = reply.value("graph_error", json("no reason given"));
    why = error.is_string() ? error.get<std::string>().substr(0, 400) : error.dump().substr(0, 400);
    return false;
}

std::optional<BlockTiming> CandidateProcess::graph_calls(const std::vector<int>& views,
                                                         const std::map<std::string, double>& params,
                                                         bool barrier, std::string& why) {
    const json reply =
        request({{"msg", cp::kGraphCalls}, {"views", views}, {"params", params}, {"barrier", barrier}});
    if (reply.value("graph", false) != true) {
        const json error = reply.value("graph_error", json("no reason given"));
        why = error.is_string() ? error.get<std::string>().substr(0, 400) : error.dump().substr(0, 400);
        return std::nullopt;
    }
    BlockTiming timing = timing_from(reply);
    if (!timing.samples_ms.empty() || timing.calls != static_cast<int>(views.size())) {
        throw CandidateFailure(std::string(cp::kFailProtocol),
                               "the process answered a graph block of " + std::to_string(views.size()) +
                                   " calls with " + std::to_string(timing.calls) + " calls and " +
                                   std::to_string(timing.samples_ms.size()) + " samples");
    }
    return timing;
}

void CandidateProcess::trace(int views, int iterations) {
    request({{"msg", cp::kTrace}, {"views", views}, {"iterations", iterations}});
}

} // namespace pkbw::engine
