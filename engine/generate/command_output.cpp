#include "command_output.h"

#include "pkbw/core/protocol.h"

#include <ostream>

namespace pkbw::generate {

void CommandOutput::event(const std::string& name, nlohmann::json body) {
    if (!json_)
        return;
    body["event"] = name;
    std::lock_guard lock(mutex_);
    out_ << body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n" << std::flush;
}

void CommandOutput::progress(const std::string& stage, nlohmann::json body, const std::string& text) {
    if (json_) {
        body["stage"] = stage;
        event(std::string(protocol::kProgress), std::move(body));
        return;
    }
    std::lock_guard lock(mutex_);
    err_ << "pkbw: " << text << "\n" << std::flush;
}

void CommandOutput::result(const std::string& text) {
    if (json_)
        return;
    std::lock_guard lock(mutex_);
    out_ << text << "\n" << std::flush;
}

} // namespace pkbw::generate
