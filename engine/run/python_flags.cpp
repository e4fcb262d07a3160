#include "python_flags.h"

#include "safety.h"

#include <map>
#include <regex>
#include <set>

namespace pkbw::cli {
namespace {

// torch.distributed's names for each NCCL collective (the functional and the legacy spellings).
const std::map<std::string, std::vector<std::string>>& python_names() {
    static const std::map<std::string, std::vector<std::string>> names = {
        {"ncclAllReduce", {"all_reduce"}},
        {"ncclAllGather", {"all_gather", "all_gather_into_tensor", "_all_gather_base", "all_gather_tensor"}},
        {"ncclReduceScatter", {"reduce_scatter", "reduce_scatter_tensor", "_reduce_scatter_base"}},
        {"ncclBroadcast", {"broadcast"}},
        {"ncclReduce", {"reduce"}},
        {"ncclAlltoAll", {"all_to_all", "all_to_all_single"}},
        {"ncclGather", {"gather"}},
        {"ncclScatter", {"scatter"}}};
    return names;
}

// Every distinct match of `pattern`'s first group in `code`, in order.
std::vector<std::string> matches(const std::string& code, const std::regex& pattern) {
    std::vector<std::string> found;
    std::set<std::string> seen;
    for (auto it = std::sregex_iterator(code.begin(), code.end(), pattern); it != std::sregex_iterator();
         ++it) {
        if (seen.insert((*it)[1].str()).second) {
            found.push_back((*it)[1].str());
        }
    }
    return found;
}

void collective_flags(const std::string& code, const std::string& own, std::vector<Flag>& flags) {
    // Through torch.distributed (dist.all_reduce, funcol.all_gather_tensor, c10d's) and through NCCL in
    // the CUDA source (ncclAllReduce).
    static const std::regex torch_call(
        R"((?:\bdist|\btorch\.distributed|\bfuncol|\b_functional_collectives|\bc10d)\.(\w+)\s*\()");
    static const std::regex nccl_call(
        R"(\b(nccl(?:AllReduce|AllGather|ReduceScatter|Broadcast|Bcast|Reduce|AlltoAll|Gather|Scatter|Send|Recv))\s*\()");
    std::set<std::string> own_names;
    if (auto it = python_names().find(own); it != python_names().end()) {
        own_names.insert(it->second.begin(), it->second.end());
    }
    std::set<std::string> collectives;
    for (const auto& [nccl, names] : python_names()) {
        collectives.insert(names.begin(), names.end());
    }
    for (const auto& name : matches(code, torch_call)) {
        if (own_names.count(name)) {
            flags.push_back(
                {"suspect", "calls torch.distributed " + name,
                 "the problem's own collective: the library may do the work the candidate is judged on"});
        } else if (collectives.count(name)) {
            flags.push_back({"info", "calls torch.distributed " + name,
                             "a building block: not the whole problem's answer"});
        }
    }
    for (const auto& name : matches(code, nccl_call)) {
        const bool is_own = name == own || (own == "ncclBroadcast" && name == "ncclBcast");
        flags.push_back(
            is_own
                ? Flag{"suspect", "calls NCCL collective " + name,
                       "the problem's own collective: the library may do the work the candidate is judged on"}
                : Flag{"info", "calls NCCL collective " + name,
                       "a building block: not the whole problem's answer"});
    }
}

struct Pattern {
    const char* severity;
    const char* text;
    const char* reason;
    std::regex regex;
};

const std::vector<Pattern>& patterns() {
    static const std::vector<Pattern> list = [] {
        std::vector<Pattern> p;
        const char* own = "in the solution's own code";
        p.push_back(
            {"suspect", "replaces a timer", own,
             std::regex(
                 R"((?:\btime\.(?:perf_counter(?:_ns)?|time|monotonic(?:_ns)?)|\btorch\.cuda\.(?:Event|synchronize)|\.(?:elapsed_time|record))\s*=[^=])")});
        p.push_back({"suspect", "reads /proc/self/maps or /proc/self/mem", own,
                     std::regex(R"(/proc/(?:self|%d|\{[^}]*\})/(?:maps|mem)\b)")});
        p.push_back(
            {"suspect", "imports PKB's reference", own,
             std::regex(R"((?:^|\n)\s*(?:from\s+reference\b|import\s+reference\b)|\breference/\d+_)")});
        p.push_back(
            {"suspect", "reaches into other modules or frames (sys.modules, gc, stack frames)", own,
             std::regex(
                 R"(\b(?:sys\.modules|gc\.get_objects|gc\.get_referrers|sys\._getframe|inspect\.(?:stack|currentframe|getouterframes))\b)")});
        p.push_back(
            {"suspect", "starts host threads or processes (threading, multiprocessing, fork)", own,
             std::regex(
                 R"(\b(?:threading\.Thread|multiprocessing\.\w+|os\.fork|subprocess\.\w+|concurrent\.futures)\b)")});
        p.push_back({"info", "loads a native library at run time (ctypes)",
                     "a library of the system's, not the answer",
                     std::regex(R"(\bctypes\.(?:CDLL|cdll|PyDLL|util)\b)")});
        p.push_back(
            {"info", "calls cuBLAS through torch (matmul, mm, linear)",
             "torch's GEMMs; no GEMM marker makes them suspect",
             std::regex(
                 R"(\b(?:torch\.(?:matmul|mm|bmm|addmm|baddbmm|einsum)|F\.linear|functional\.linear)\s*\()")});
        return p;
    }();
    return list;
}

} // namespace

std::string own_collective_symbol(const Problem& problem, const ProblemConfig& config) {
    static const std::map<CollectiveKind, std::string> names = {
        {CollectiveKind::AllReduce, "ncclAllReduce"},
        {CollectiveKind::AllGather, "ncclAllGather"},
        {CollectiveKind::ReduceScatter, "ncclReduceScatter"},
        {CollectiveKind::Broadcast, "ncclBroadcast"},
        {CollectiveKind::Reduce, "ncclReduce"},
        {CollectiveKind::AllToAll, "ncclAlltoAll"},
        {CollectiveKind::Gather, "ncclGather"},
        {CollectiveKind::Scatter, "ncclScatter"}};
    // Only where the collective is the whole problem (category CC, PKB 1-8) is calling it the answer;
    // elsewhere it carries the problem's communication around computation the candidate does itself.
    if (problem.info().category != "CC") {
        return {};
    }
    try {
        const auto found = names.find(problem.work(config).collective);
        return found != names.end() ? found->second : std::string();
    } catch (const std::exception&) {
        return {};
    }
}

std::vector<Flag> python_candidate_flags(std::string_view source, const std::string& problem_collective) {
    const std::string code = code_only(source, SourceLanguage::Python);
    std::vector<Flag> flags;
    collective_flags(code, problem_collective, flags);
    for (const auto& pattern : patterns()) {
        if (std::regex_search(code, pattern.regex)) {
            flags.push_back({pattern.severity, pattern.text, pattern.reason});
        }
    }
    return flags;
}

} // namespace pkbw::cli
