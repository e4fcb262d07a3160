#include "json_maps_filter.h"

namespace pkbw::cli {

std::size_t strip_error_maps(nlohmann::json& value) {
    std::size_t removed = 0;
    if (value.is_object()) {
        removed += value.erase("error_map");
        for (auto& [key, member] : value.items())
            removed += strip_error_maps(member);
    } else if (value.is_array()) {
        for (auto& element : value)
            removed += strip_error_maps(element);
    }
    return removed;
}

ErrorMapFilter::~ErrorMapFilter() {
    if (!pending_.empty())
        write_line(pending_);
    sink_.flush();
}

void ErrorMapFilter::write_line(std::string_view line) {
    if (!line.empty() && line.front() == '{' && line.find("\"error_map\"") != std::string_view::npos) {
        nlohmann::json body = nlohmann::json::parse(line, nullptr, false);
        if (!body.is_discarded() && strip_error_maps(body) > 0) {
            sink_ << body.dump() << '\n';
            return;
        }
    }
    sink_ << line << '\n';
}

ErrorMapFilter::int_type ErrorMapFilter::overflow(int_type ch) {
    if (traits_type::eq_int_type(ch, traits_type::eof()))
        return traits_type::not_eof(ch);
    const char c = traits_type::to_char_type(ch);
    xsputn(&c, 1);
    return ch;
}

std::streamsize ErrorMapFilter::xsputn(const char* data, std::streamsize count) {
    std::string_view text(data, static_cast<std::size_t>(count));
    for (std::size_t newline; (newline = text.find('\n')) != std::string_view::npos;) {
        if (pending_.empty()) {
            write_line(text.substr(0, newline));
        } else {
            pending_.append(text.substr(0, newline));
            write_line(pending_);
            pending_.clear();
        }
        text.remove_prefix(newline + 1);
    }
    pending_.append(text);
    return count;
}

int ErrorMapFilter::sync() {
    // A partial line stays until its newline: only whole lines go out, so a reader never sees half a
    // JSON object.
    sink_.flush();
    return sink_ ? 0 : -1;
}

} // namespace pkbw::cli
