#include "cli_errors.h"

#include "pkbw/core/protocol.h"
#include "pkbw/core/status.h"
#include "suggest.h"

#include <cctype>
#include <nlohmann/json.hpp>
#include <ostream>

namespace pkbw::cli {

namespace {

using nlohmann::json;

bool is_option_token(const std::string& token) {
    if (token.size() < 2 || token[0] != '-')
        return false;
    // A negative number is a value ("--nproc -1"), not an option.
    return !(std::isdigit(static_cast<unsigned char>(token[1])) || token[1] == '.');
}

CLI::App* find_subcommand(CLI::App& app, const std::string& name) {
    for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; }))
        if (sub->check_name(name))
            return sub;
    return nullptr;
}

std::vector<std::string> subcommand_names(CLI::App& app) {
    std::vector<std::string> names;
    for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; }))
        if (!sub->get_name().empty())
            names.push_back(sub->get_name());
    return names;
}

std::vector<std::string> option_names(CLI::App& command) {
    std::vector<std::string> names;
    for (const CLI::Option* option : command.get_options()) {
        for (const auto& name : option->get_lnames())
            names.push_back("--" + name);
        for (const auto& name : option->get_snames())
            names.push_back("-" + name);
    }
    return names;
}

const CLI::Option* find_option(CLI::App& command, const std::string& token) {
    const std::string name = token.substr(0, token.find('='));
    if (const CLI::Option* option = command.get_option_no_throw(name))
        return option;
    // "-p1": a short option with its value attached.
    if (name.size() > 2 && name[1] != '-')
        return command.get_option_no_throw(name.substr(0, 2));
    return nullptr;
}

struct Walk {
    CLI::App* command = nullptr;
    std::string path;          // "eval", "store check"
    std::size_t first_arg = 1; // the index after the command's name
    std::string unknown;       // a word where a command was expected
    CLI::App* unknown_parent = nullptr;
};

// Follows the command names in args; stops at the first word that is not one where one was expected.
Walk walk(CLI::App& app, const std::vector<std::string>& args) {
    Walk w;
    w.command = &app;
    for (std::size_t i = 1; i < args.size(); ++i) {
        const std::string& token = args[i];
        if (token == "--")
            break;
        if (is_option_token(token))
            continue;
        if (w.command->get_subcommands([](CLI::App*) { return true; }).empty())
            break;
        if (CLI::App* sub = find_subcommand(*w.command, token)) {
            w.command = sub;
            w.path += (w.path.empty() ? "" : " ") + sub->get_name();
            w.first_arg = i + 1;
            continue;
        }
        // The top level takes no words of its own, and a group such as `store` only its commands.
        if (w.command == &app || w.command->get_require_subcommand_min() > 0 ||
            w.command->get_options([](CLI::Option* o) { return o->get_positional(); }).empty()) {
            w.unknown = token;
            w.unknown_parent = w.command;
        }
        break;
    }
    return w;
}

std::string did_you_mean(const std::vector<std::string>& close) {
    std::string text;
    for (std::size_t i = 0; i < close.size(); ++i)
        text += (i == 0 ? "" : i + 1 == close.size() ? " or " : ", ") + close[i];
    return text;
}

} // namespace

bool wants_json(const std::vector<std::string>& args) {
    for (std::size_t i = 1; i < args.size(); ++i) {
        if (args[i] == "--")
            return false;
        if (args[i] == "--json")
            return true;
    }
    return false;
}

std::string command_path(CLI::App& app, const std::vector<std::string>& args) {
    return walk(app, args).path;
}

std::string parse_error_message(CLI::App& app, const CLI::ParseError& error,
                                const std::vector<std::string>& args) {
    const Walk w = walk(app, args);
    const std::string prefix = "pkbw" + (w.path.empty() ? std::string() : " " + w.path);
    if (!w.unknown.empty()) {
        const auto close = closest_names(w.unknown, subcommand_names(*w.unknown_parent), 2);
        return "'" + w.unknown + "' is not a " + prefix + " command" +
               (close.empty() ? "" : "; did you mean " + did_you_mean(close) + "?") + " (" + prefix +
               " --help lists them)";
    }
    for (std::size_t i = w.first_arg; i < args.size(); ++i) {
        const std::string& token = args[i];
        if (token == "--")
            break;
        if (!is_option_token(token))
            continue;
        const CLI::Option* option = find_option(*w.command, token);
        if (option != nullptr) {
            // Its value is the next word (unless attached with '='): never read it as an option.
            if (token.find('=') == std::string::npos && option->get_expected_min() > 0 &&
                option->get_type_size() > 0)
                ++i;
            continue;
        }
        const std::string name = token.substr(0, token.find('='));
        const auto close = closest_names(name, option_names(*w.command), 1);
        return prefix + ": " + name + ": unknown option" +
               (close.empty() ? "" : "; did you mean " + close.front() + "?") + " (" + prefix +
               " --help lists them)";
    }
    std::string text = error.what();
    if (!w.path.empty() && text.find(w.path) == std::string::npos)
        text = prefix + ": " + text;
    return text;
}

std::string error_json_line(const std::string& command, int exit_code, const std::string& message) {
    if (command == "eval" || command == "perf" || command == "dryrun" || command == "calibrate")
        return json{{"event", protocol::kRunFinished}, {"run_id", 0},        {"status", status::kError},
                    {"exit_code", exit_code},          {"message", message}, {"trials", json::array()},
                    {"warnings", json::array()}}
                   .dump() +
               "\n";
    return json{{"event", protocol::kError},
                {"command", command},
                {"exit_code", exit_code},
                {"message", message}}
               .dump(-1, ' ', false, json::error_handler_t::replace) +
           "\n";
}

StreamTail::StreamTail(std::ostream& stream)
    : stream_(stream)
    , original_(stream.rdbuf()) {
    stream_.rdbuf(this);
}

StreamTail::~StreamTail() {
    stream_.rdbuf(original_);
}

int StreamTail::overflow(int c) {
    if (c == traits_type::eof())
        return traits_type::not_eof(c);
    const char ch = static_cast<char>(c);
    xsputn(&ch, 1);
    return c;
}

std::streamsize StreamTail::xsputn(const char* text, std::streamsize count) {
    constexpr std::size_t kKeep = 4096;
    tail_.append(text, static_cast<std::size_t>(count));
    if (tail_.size() > 2 * kKeep)
        tail_.erase(0, tail_.size() - kKeep);
    return original_->sputn(text, count);
}

int StreamTail::sync() {
    return original_->pubsync();
}

std::string StreamTail::message() const {
    std::string out, line;
    auto add = [&out](std::string text) {
        if (text.rfind("pkbw", 0) == 0) {
            const auto colon = text.find(": ");
            if (colon != std::string::npos && colon < 32)
                text.erase(0, colon + 2);
        }
        if (!text.empty())
            out += (out.empty() ? "" : "; ") + text;
    };
    for (char c : tail_) {
        if (c == '\n') {
            add(line);
            line.clear();
        } else {
            line += c;
        }
    }
    add(line);
    return out;
}

} // namespace pkbw::cli
