#include "python_flags.h"

#include "safety.h"

#include <algorithm>
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

// torch's symmetric-memory all-reduces (no NCCL kernel for the trace to see): the all-reduce's too.
const std::vector<std::string>& symmetric_all_reduces() {
    static const std::vector<std::string> names = {"one_shot_all_reduce", "two_shot_all_reduce",
                                                   "multimem_all_reduce_", "multimem_one_shot_all_reduce"};
    return names;
}

void collective_flags(const std::string& code, const std::string& own, std::vector<Flag>& flags) {
    // Through torch.distributed on any receiver or alias (dist.all_reduce, D.all_reduce, funcol's,
    // c10d's, a process group's allreduce, f = dist.all_reduce), imported by name, and through NCCL in
    // the CUDA source (ncclAllReduce, &ncclAllReduce, pncclAllReduce). Names that are also tensor
    // methods (gather, scatter, reduce, broadcast) count only on torch.distributed's usual receivers.
    static const std::regex any_receiver(
        R"(\.\s*(all_reduce|allreduce|all_reduce_coalesced|allreduce_coalesced|all_gather|all_gather_into_tensor|_all_gather_base|all_gather_tensor|reduce_scatter|reduce_scatter_tensor|_reduce_scatter_base|all_to_all|all_to_all_single|one_shot_all_reduce|two_shot_all_reduce|multimem_all_reduce_|multimem_one_shot_all_reduce)\b)");
    static const std::regex dist_receiver(
        R"((?:\bdist|\btorch\.distributed|\bfuncol|\b_functional_collectives|\bc10d)\s*\.\s*(\w+)\b)");
    static const std::regex imported(
        R"(\bimport\b[^\n]*?\b(all_reduce|allreduce|all_gather_into_tensor|reduce_scatter_tensor|all_to_all_single)\b)");
    static const std::regex star(R"(\bfrom\s+torch\.distributed\S*\s+import\s+\*)");
    static const std::regex nccl_name(
        R"(\bp?(nccl(?:AllReduce|AllGather|ReduceScatter|Broadcast|Bcast|Reduce|AlltoAll|Gather|Scatter|Send|Recv))\b)");
    std::set<std::string> own_names;
    if (auto it = python_names().find(own); it != python_names().end())
        own_names.insert(it->second.begin(), it->second.end());
    if (own == "ncclAllReduce") {
        own_names.insert({"allreduce", "all_reduce_coalesced", "allreduce_coalesced"});
        own_names.insert(symmetric_all_reduces().begin(), symmetric_all_reduces().end());
    }
    std::set<std::string> collectives = {"allreduce", "all_reduce_coalesced", "allreduce_coalesced"};
    for (const auto& [nccl, names] : python_names())
        collectives.insert(names.begin(), names.end());
    collectives.insert(symmetric_all_reduces().begin(), symmetric_all_reduces().end());
    std::vector<std::string> names = matches(code, any_receiver);
    for (const auto& more : {matches(code, dist_receiver), matches(code, imported)})
        for (const auto& name : more)
            if (std::find(names.begin(), names.end(), name) == names.end())
                names.push_back(name);
    if (std::regex_search(code, star) && own_names.count("all_reduce") &&
        std::find(names.begin(), names.end(), "all_reduce") == names.end())
        names.push_back("all_reduce"); // `from torch.distributed import *` brings it in unnamed
    for (const auto& name : names) {
        if (own_names.count(name)) {
            flags.push_back(
                {"suspect", "calls torch.distributed " + name,
                 "the problem's own collective: the library may do the work the candidate is judged on"});
        } else if (collectives.count(name)) {
            flags.push_back({"info", "calls torch.distributed " + name,
                             "a building block: not the whole problem's answer"});
        }
    }
    if (own == "ncclAllReduce") { // two collectives that make the problem's own (as in elf_symbols.cpp)
        auto has = [&](std::initializer_list<const char*> any) {
            return std::any_of(any.begin(), any.end(), [&](const char* n) {
                return std::find(names.begin(), names.end(), n) != names.end();
            });
        };
        if (has({"reduce_scatter", "reduce_scatter_tensor", "_reduce_scatter_base"}) &&
            has({"all_gather", "all_gather_into_tensor", "_all_gather_base", "all_gather_tensor"}))
            flags.push_back(
                {"suspect",
                 "calls torch.distributed collectives that make an all-reduce (reduce_scatter + all_gather)",
                 "together they are the problem's own collective"});
        if (has({"reduce"}) && has({"broadcast"}))
            flags.push_back(
                {"suspect",
                 "calls torch.distributed collectives that make an all-reduce (reduce + broadcast)",
                 "together they are the problem's own collective"});
    }
    for (const auto& name : matches(code, nccl_name)) {
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
    // Each pattern was held against the 257 solutions three models wrote for PKB (.pkb): those marked
    // suspect match none of them (a red team's 99 hostile files found the gaps they close).
    static const std::vector<Pattern> list = [] {
        std::vector<Pattern> p;
        const char* own = "in the solution's own code";
        p.push_back(
            {"suspect", "replaces a timer or the profiler", own,
             std::regex(
                 R"((?:\b\w+(?:\.\w+)*\.(?:perf_counter(?:_ns)?|monotonic(?:_ns)?|time(?:_ns)?|process_time|thread_time|elapsed_time|record|synchronize|Event|between|mark)\s*(?::[^\n=]*)?=[^=])|\bsetattr\s*\([^,\n]+,\s*["'](?:perf_counter(?:_ns)?|monotonic(?:_ns)?|time(?:_ns)?|process_time|elapsed_time|record|synchronize|query|Event|between|mark)["']|__setattr__|__dict__\s*\[|\btorch\.profiler\.\w+(?:\.\w+)*\s*=[^=]|\bprofile\.\w+\s*=[^=])")});
        p.push_back({"suspect", "reads /proc or /dev/shm", own, std::regex(R"(/proc\b|/dev/shm\b)")});
        p.push_back(
            {"suspect", "imports PKB's reference", own,
             std::regex(R"((?:^|\n)\s*(?:from\s+reference\b|import\s+reference\b)|\breference/\d+_)")});
        p.push_back(
            {"suspect", "reaches into other modules or frames (sys.modules, gc, stack frames, pkbw)", own,
             std::regex(
                 R"(\b(?:sys\.modules|gc\.get_objects|gc\.get_referrers|sys\._getframe|inspect\.(?:stack|currentframe|getouterframes))\b|\bmodules\b(?!\s*\()|tb_frame|\bf_back\b|\bf_globals\b|__globals__|__builtins__|\bsettrace\b|\bsetprofile\b|\bpkbw\w*|PKBW_|(?:^|\n)\s*(?:import|from)\s+(?:gc|inspect|traceback|builtins|__main__|mmap)\b)")});
        p.push_back(
            {"suspect", "starts host threads or processes (threading, multiprocessing, subprocess, os.fork)",
             own,
             std::regex(
                 R"(\b(?:threading\.Thread|multiprocessing\.\w+|os\.fork|subprocess\.\w+|concurrent\.futures)\b|(?:^|\n)\s*(?:import|from)\s+(?:subprocess|multiprocessing|threading|_thread|concurrent|pty|signal|torch\.multiprocessing)\b|\bos\s*\.\s*(?:system|popen|fork\w*|spawn\w*|posix_spawn\w*|exec\w+)\b)")});
        p.push_back({"suspect", "signals or writes to other processes (os.kill, os.write, os.dup2)", own,
                     std::regex(R"(\bos\s*\.\s*(?:kill\w*|write|dup2?|getppid)\b)")});
        p.push_back(
            {"suspect", "changes the environment (os.environ, putenv)", own,
             std::regex(
                 R"(\bos\.environ\s*\[[^\]]*\]\s*=[^=]|\bos\.putenv\b|\bos\.environ\.(?:update|setdefault)\b)")});
        p.push_back(
            {"suspect",
             "runs code it builds at run time (exec, eval, compile, __import__, importlib, "
             "decoding)",
             own,
             std::regex(
                 R"((?:^|[^\w.])(?:exec|eval|compile|__import__)\s*\(|\bimportlib\b|\bmarshal\b|\bb64decode\b|\bcodecs\.decode\b|\bfromhex\b|\bcpp_extension\.load\s*\(|__doc__|\b(?:getattr|setattr)\s*\(\s*[\w.]+\s*,(?!\s*["']\w+["']\s*[,)]))")});
        p.push_back({"suspect", "calls libc or NCCL's library through ctypes", own,
                     std::regex(R"(CDLL\s*\(\s*None|["']libc|["'][^"'\n]*libnccl)")});
        p.push_back({"info", "loads a native library at run time (ctypes)",
                     "a library of the system's, not the answer",
                     std::regex(R"(\bctypes\.(?:CDLL|cdll|PyDLL|util)\b)")});
        p.push_back(
            {"info", "uses NCCL or the process group outside torch.distributed",
             "NCCL's kernels still show in the trace",
             std::regex(
                 R"(\btorch\.(?:cuda\.)?nccl\b|\bcupy\b|\bdistributed\.nn\b|\btorch\.ops\.(?:c10d|_c10d_functional)\b|nccl\.h|-lnccl|\bProcessGroupNCCL\b|\bc10d::)")});
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
    // Windows line ends first: a backslash before "\r\n" continues the line as one before "\n" does.
    std::string unix_source(source);
    std::erase(unix_source, '\r');
    const std::string code = code_only(unix_source, SourceLanguage::Python);
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
