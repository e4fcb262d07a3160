#include "judge_reader.h"

#include "pkbw/core/protocol.h"
#include "pkbw/core/status.h"

#include <cmath>
#include <iomanip>
#include <sstream>

namespace pkbw::generate {

using nlohmann::json;

namespace {

constexpr std::size_t kTailBytes = 2000;

std::string source_line(const std::string& source, int line) {
    std::istringstream in(source);
    std::string text;
    for (int i = 1; std::getline(in, text); ++i)
        if (i == line)
            return text;
    return {};
}

std::string number(double v) {
    std::ostringstream s;
    s << std::setprecision(4) << v;
    return s.str();
}

} // namespace

void JudgeOutputReader::feed(std::string_view bytes) {
    bytes_ += bytes.size();
    tail_.append(bytes.size() > kTailBytes ? bytes.substr(bytes.size() - kTailBytes) : bytes);
    if (tail_.size() > 2 * kTailBytes)
        tail_.erase(0, tail_.size() - kTailBytes);
    for (std::size_t newline; (newline = bytes.find('\n')) != std::string_view::npos;) {
        if (partial_.empty()) {
            line(bytes.substr(0, newline));
        } else {
            partial_.append(bytes.substr(0, newline));
            line(partial_);
            partial_.clear();
        }
        bytes.remove_prefix(newline + 1);
    }
    partial_.append(bytes);
}

void JudgeOutputReader::finish() {
    if (!partial_.empty())
        line(partial_);
    partial_.clear();
    if (tail_.size() > kTailBytes)
        tail_.erase(0, tail_.size() - kTailBytes);
}

void JudgeOutputReader::line(std::string_view text) {
    if (text.empty() || text.front() != '{')
        return;
    json j = json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("event"))
        return;
    const std::string event = j.value("event", "");
    if (event == protocol::kRunStarted)
        run_id_ = j.value("run_id", std::int64_t{0});
    else if (event == protocol::kCompile && j.value("side", "") == "candidate" &&
             j.value("status", "") == "error")
        compile_errors_.push_back(std::move(j));
    else if (event == protocol::kRunFinished)
        finished_ = std::move(j);
    else if (event == protocol::kProgress && on_progress)
        on_progress(j);
}

Verdict JudgeOutputReader::verdict(const std::string& source) const {
    Verdict v;
    v.run_id = run_id_;
    std::ostringstream feedback;
    json finished = finished_; // as the judge wrote it (small: --json carries no error maps)
    const std::vector<json>& compile_errors = compile_errors_;
    if (finished.is_null()) {
        v.status = "judge_failed";
        v.feedback = "pkbw could not judge the candidate (no run_finished line). Its output ends with:\n" +
                     (tail_.size() > kTailBytes ? tail_.substr(tail_.size() - kTailBytes) : tail_);
        return v;
    }
    v.run_id = finished.value("run_id", v.run_id);
    v.status = finished.value("status", "unknown");
    feedback << "pkbw's verdict on your candidate (run " << v.run_id << "): " << v.status;
    if (std::string message = finished.value("message", ""); !message.empty())
        feedback << " - " << message;
    feedback << "\n";
    for (const auto& c : compile_errors) {
        feedback << "\nThe candidate did not compile.";
        int shown = 0;
        for (const auto& d : c.value("diagnostics", json::array())) {
            if (shown++ == 20)
                break;
            int ln = d.value("line", 0);
            feedback << "\n- line " << ln << ", column " << d.value("column", 0) << ": "
                     << d.value("severity", "") << ": " << d.value("message", "");
            if (std::string text = source_line(source, ln); ln > 0 && !text.empty())
                feedback << "\n    " << ln << " | " << text;
        }
        if (shown == 0)
            feedback << "\n" << c.value("message", "").substr(0, 4000);
        feedback << "\n";
    }
    for (const auto& trial : finished.value("trials", json::array())) {
        bool header = false;
        for (const auto& rank : trial.value("ranks", json::array())) {
            std::string status = rank.value("status", "");
            if (status == status::kPass)
                continue;
            if (!header) {
                feedback << "\nTrial " << trial.value("trial", 0) << ":";
                header = true;
            }
            feedback << "\n- rank " << rank.value("rank", 0) << ": " << status;
            if (std::string m = rank.value("message", ""); !m.empty())
                feedback << " (" << m.substr(0, 500) << ")";
            for (const auto& t : rank.value("tensors", json::array())) {
                if (t.value("pass", true))
                    continue;
                feedback << "\n    output `" << t.value("name", "") << "`: " << t.value("mismatch_count", 0)
                         << " of " << t.value("numel", 0) << " elements outside tolerance";
                if (t.contains("max_abs_error") && t["max_abs_error"].is_number())
                    feedback << ", max abs error " << number(t["max_abs_error"].get<double>());
                if (t.contains("max_rel_error") && t["max_rel_error"].is_number())
                    feedback << ", max rel error " << number(t["max_rel_error"].get<double>());
                if (t.contains("first_mismatch"))
                    feedback << ", first at flat index " << t["first_mismatch"].dump();
                if (!t.value("shape_match", true))
                    feedback << ", shape " << t.value("cand_shape", json()).dump() << " instead of "
                             << t.value("ref_shape", json()).dump();
            }
        }
        if (header)
            feedback << "\n";
    }
    const bool withheld = finished.contains("perf") && finished["perf"].is_object() &&
                          finished["perf"].contains("withheld") && finished["perf"]["withheld"].is_string();
    if (withheld) {
        // The speedup is no result (timing not trusted, ...): neither the model nor the trajectory gets
        // its figures as one, only why (docs/cli.md "Stored timing").
        feedback << "\nPerf: speedup withheld: " << finished["perf"]["withheld"].get<std::string>() << "\n";
    } else if (finished.contains("perf") && finished["perf"].contains("pkbw")) {
        const json& p = finished["perf"]["pkbw"];
        if (p["speedup"].is_number())
            v.speedup = p["speedup"].get<double>();
        if (p["ci_low"].is_number())
            v.ci_low = p["ci_low"].get<double>();
        if (p["ci_high"].is_number())
            v.ci_high = p["ci_high"].get<double>();
        v.perf_verdict = p.value("verdict", "");
        if (v.speedup)
            feedback << "\nPerf: speedup " << number(*v.speedup) << "x over the reference (95% interval "
                     << number(v.ci_low.value_or(NAN)) << " to " << number(v.ci_high.value_or(NAN)) << ", "
                     << v.perf_verdict << ")";
        if (finished["perf"].contains("plausibility") &&
            finished["perf"]["plausibility"].value("below_floor", false))
            feedback << "; the candidate's time is below the physical floor: the timing is not trusted";
        feedback << "\n";
    }
    for (const auto& w : finished.value("warnings", json::array()))
        if (w.is_string())
            feedback << "Warning: " << w.get<std::string>() << "\n";
    v.feedback = feedback.str();
    return v;
}

} // namespace pkbw::generate
