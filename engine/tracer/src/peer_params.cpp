#include "peer_params.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <cxxabi.h>

namespace pkbw::tracer {
namespace {

// The text of the parameter list at the end of a demangled function name: what lies inside its last
// top-level parentheses ("void tk<float, 4>(float*, S, void (*)(int))" -> "float*, S, void (*)(int)").
std::optional<std::string> parameter_list(const std::string& demangled) {
    if (demangled.empty() || demangled.back() != ')')
        return std::nullopt;
    int depth = 0;
    for (std::size_t i = demangled.size(); i-- > 0;) {
        if (demangled[i] == ')')
            ++depth;
        else if (demangled[i] == '(' && --depth == 0)
            return demangled.substr(i + 1, demangled.size() - i - 2);
    }
    return std::nullopt;
}

std::string trimmed(const std::string& text) {
    const auto begin = text.find_first_not_of(' ');
    const auto end = text.find_last_not_of(' ');
    return begin == std::string::npos ? std::string() : text.substr(begin, end - begin + 1);
}

} // namespace

std::optional<std::vector<bool>> pointer_parameters(const std::string& mangled) {
    if (mangled.rfind("_Z", 0) != 0)
        return std::nullopt; // extern "C": no signature in the name
    int status = 0;
    char* raw = abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status);
    if (status != 0 || raw == nullptr) {
        std::free(raw);
        return std::nullopt;
    }
    const std::string demangled(raw);
    std::free(raw);
    const auto list = parameter_list(demangled);
    if (!list)
        return std::nullopt;
    std::vector<bool> pointers;
    if (trimmed(*list).empty() || trimmed(*list) == "void")
        return pointers;
    // Split at top-level commas: template arguments, function pointer types and arrays nest. A '<' or
    // '>' inside an expression template argument ("S<((4)>(1))>") leaves the brackets unbalanced: the
    // count is then unknown, and a launch whose parameters cannot be counted is never read (reading
    // past its parameter array would crash an honest run).
    int depth = 0;
    std::string current;
    auto finish = [&] {
        const std::string parameter = trimmed(current);
        pointers.push_back(!parameter.empty() && parameter.back() == '*');
        current.clear();
    };
    for (char c : *list) {
        if (c == '(' || c == '<' || c == '[')
            ++depth;
        else if (c == ')' || c == '>' || c == ']')
            --depth;
        if (depth < 0)
            return std::nullopt;
        if (c == ',' && depth == 0)
            finish();
        else
            current += c;
    }
    if (depth != 0)
        return std::nullopt;
    finish();
    return pointers;
}

void PeerRanges::add(std::uint64_t begin, std::uint64_t bytes) {
    if (bytes == 0)
        return;
    std::lock_guard lock(mutex_);
    auto& end = ranges_[begin];
    end = std::max(end, begin + bytes);
}

bool PeerRanges::contains(std::uint64_t address) const {
    // The ranges are distinct allocations (one per peer buffer or table): the nearest one starting at
    // or below the address is the only one that can hold it.
    std::lock_guard lock(mutex_);
    auto it = ranges_.upper_bound(address); // the first range starting after the address
    if (it == ranges_.begin())
        return false;
    --it;
    return address >= it->first && address < it->second;
}

bool PeerRanges::empty() const {
    std::lock_guard lock(mutex_);
    return ranges_.empty();
}

bool launch_touches_peer_memory(const std::vector<bool>& pointers, void* const* args,
                                const PeerRanges& peers) {
    if (args == nullptr)
        return false;
    for (std::size_t i = 0; i < pointers.size(); ++i) {
        if (!pointers[i] || args[i] == nullptr)
            continue;
        std::uint64_t value = 0;
        std::memcpy(&value, args[i], sizeof value);
        if (peers.contains(value))
            return true;
    }
    return false;
}

} // namespace pkbw::tracer
