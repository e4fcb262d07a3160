// A libFuzzer-compatible main for builds without libFuzzer (gcc: Debian's gcc ships no
// -fsanitize=fuzzer), so that every fuzz_* target also builds and runs in the default build and
// CTest's fuzz_<target>_short tests need no clang. It is coverage-blind: it replays the seeds, then
// mutates them at random (bit flips, byte changes, insert/delete, splices of two seeds, dictionary
// tokens) for -max_total_time seconds from a fixed -seed. Coverage-guided fuzzing is tools/fuzz.sh's
// job (docs/fuzzing.md).
//
//   fuzz_x [-max_total_time=S] [-seed=N] [-runs=N] [-max_len=N] [-timeout=S] [-dict=FILE]
//          [-artifact_prefix=P] [file-or-dir ...]
//
// An exception escaping the target, a fatal signal or an input running past -timeout writes the
// input to <artifact_prefix>crash-<n> (timeout-<n>) and exits 1. Unknown -flags are ignored, as
// libFuzzer's runner scripts pass some this driver has no use for.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <random>
#include <string>
#include <unistd.h>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

using Bytes = std::vector<std::uint8_t>;

struct Options {
    double max_total_time = 10;
    std::uint64_t seed = 1;
    long long runs = -1; // mutation runs; -1: until max_total_time
    std::size_t max_len = 0;
    unsigned timeout = 60;
    std::string dict;
    std::string artifact_prefix = "./";
    std::vector<std::string> inputs;
};

// What the signal handlers need, prepared before any input runs (they may only call write/_exit).
struct Current {
    const std::uint8_t* data = nullptr;
    std::size_t size = 0;
    std::string crash_path;
    std::string timeout_path;
};
Current g_current;

void write_all(int fd, const void* data, std::size_t size) {
    const auto* p = static_cast<const char*>(data);
    while (size > 0) {
        const ssize_t n = ::write(fd, p, size);
        if (n <= 0)
            return;
        p += n;
        size -= static_cast<std::size_t>(n);
    }
}

void save_current(const std::string& path, const char* what) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
        write_all(fd, g_current.data, g_current.size);
        ::close(fd);
    }
    write_all(2, what, std::strlen(what));
    write_all(2, "; input written to ", 19);
    write_all(2, path.c_str(), path.size());
    write_all(2, "\n", 1);
}

extern "C" void on_fatal_signal(int sig) {
    save_current(g_current.crash_path,
                 sig == SIGABRT ? "==fuzz driver== ERROR: abort" : "==fuzz driver== ERROR: fatal signal");
    ::_exit(1);
}

extern "C" void on_alarm(int) {
    save_current(g_current.timeout_path, "==fuzz driver== ERROR: timeout");
    ::_exit(1);
}

void install_handlers() {
    struct sigaction action {};
    action.sa_handler = on_fatal_signal;
    sigemptyset(&action.sa_mask);
    // A stack of its own, so that a stack overflow is reported too.
    static std::vector<char> alt(1 << 16);
    stack_t stack{};
    stack.ss_sp = alt.data();
    stack.ss_size = alt.size();
    if (sigaltstack(&stack, nullptr) == 0)
        action.sa_flags = SA_ONSTACK;
    for (int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT})
        sigaction(sig, &action, nullptr);
    struct sigaction alarm_action {};
    alarm_action.sa_handler = on_alarm;
    sigemptyset(&alarm_action.sa_mask);
    sigaction(SIGALRM, &alarm_action, nullptr);
}

bool read_file(const std::filesystem::path& path, Bytes& out) {
    std::ifstream in(path, std::ios::binary);
    if (!in)
        return false;
    out.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    return true;
}

// libFuzzer/AFL dictionary: one token a line, `name="value"` or `"value"`, with \\, \" and \xNN escapes.
std::vector<Bytes> read_dict(const std::string& path) {
    std::vector<Bytes> tokens;
    std::ifstream in(path);
    if (!in) {
        std::cerr << "fuzz driver: cannot read dictionary " << path << "\n";
        std::exit(2);
    }
    std::string line;
    while (std::getline(in, line)) {
        const auto first = line.find_first_not_of(" \t");
        const auto open = line.find('"');
        const auto close = line.rfind('"');
        if (first == std::string::npos || line[first] == '#' || open == std::string::npos || close <= open)
            continue;
        Bytes token;
        for (std::size_t i = open + 1; i < close; ++i) {
            if (line[i] == '\\' && i + 1 < close) {
                const char next = line[i + 1];
                if (next == 'x' && i + 3 < close) {
                    token.push_back(static_cast<std::uint8_t>(std::stoi(line.substr(i + 2, 2), nullptr, 16)));
                    i += 3;
                } else {
                    token.push_back(static_cast<std::uint8_t>(next));
                    ++i;
                }
            } else {
                token.push_back(static_cast<std::uint8_t>(line[i]));
            }
        }
        if (!token.empty())
            tokens.push_back(std::move(token));
    }
    return tokens;
}

Options parse_options(int argc, char** argv) {
    Options o;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg.size() > 1 && arg[0] == '-') {
            const auto eq = arg.find('=');
            const std::string name = arg.substr(1, eq == std::string::npos ? std::string::npos : eq - 1);
            const std::string value = eq == std::string::npos ? "" : arg.substr(eq + 1);
            try {
                if (name == "max_total_time")
                    o.max_total_time = std::stod(value);
                else if (name == "seed")
                    o.seed = std::stoull(value);
                else if (name == "runs")
                    o.runs = std::stoll(value);
                else if (name == "max_len")
                    o.max_len = std::stoull(value);
                else if (name == "timeout")
                    o.timeout = static_cast<unsigned>(std::stoul(value));
                else if (name == "dict")
                    o.dict = value;
                else if (name == "artifact_prefix")
                    o.artifact_prefix = value;
                // Others (-print_final_stats, -jobs, ...) are libFuzzer's; ignored.
            } catch (const std::exception&) {
                std::cerr << "fuzz driver: bad value in " << arg << "\n";
                std::exit(2);
            }
        } else {
            o.inputs.push_back(arg);
        }
    }
    return o;
}

class Mutator {
public:
    Mutator(std::uint64_t seed, const std::vector<Bytes>& seeds, const std::vector<Bytes>& dict,
            std::size_t max_len)
        : rng_(seed)
        , seeds_(seeds)
        , dict_(dict)
        , max_len_(max_len) {}

    Bytes next() {
        Bytes data = seeds_.empty() ? Bytes{} : seeds_[below(seeds_.size())];
        // Mostly a few changes, sometimes many: small changes keep the format recognisable.
        const std::size_t count = 1 + (below(4) == 0 ? below(32) : below(4));
        for (std::size_t i = 0; i < count; ++i)
            mutate(data);
        if (data.size() > max_len_)
            data.resize(max_len_);
        return data;
    }

private:
    std::size_t below(std::size_t n) { return n == 0 ? 0 : static_cast<std::size_t>(rng_() % n); }
    std::uint8_t byte() { return static_cast<std::uint8_t>(rng_()); }

    void mutate(Bytes& d) {
        static const std::uint8_t kInteresting[] = {0,   1,   0x7f, 0x80, 0xff, '0', '9', '"', '{',
                                                    '[', ']', '}',  ',',  ':',  '-', '.', 'e', '\\'};
        switch (below(11)) {
        case 0: // flip a bit
            if (!d.empty())
                d[below(d.size())] ^= static_cast<std::uint8_t>(1u << below(8));
            break;
        case 1: // random byte
            if (!d.empty())
                d[below(d.size())] = byte();
            break;
        case 2: // interesting byte
            if (!d.empty())
                d[below(d.size())] = kInteresting[below(std::size(kInteresting))];
            break;
        case 3: // small add/subtract (lengths, counts, offsets)
            if (!d.empty())
                d[below(d.size())] += static_cast<std::uint8_t>(below(33)) - 16;
            break;
        case 4: { // insert random bytes
            const std::size_t at = below(d.size() + 1);
            const std::size_t n = 1 + below(8);
            for (std::size_t i = 0; i < n; ++i)
                d.insert(d.begin() + static_cast<std::ptrdiff_t>(at), byte());
            break;
        }
        case 5: { // delete a range
            if (d.empty())
                break;
            const std::size_t at = below(d.size());
            const std::size_t n = 1 + below(std::min<std::size_t>(d.size() - at, 64));
            d.erase(d.begin() + static_cast<std::ptrdiff_t>(at),
                    d.begin() + static_cast<std::ptrdiff_t>(at + n));
            break;
        }
        case 6: { // duplicate a range
            if (d.empty() || d.size() > max_len_)
                break;
            const std::size_t at = below(d.size());
            const std::size_t n = 1 + below(std::min<std::size_t>(d.size() - at, 64));
            const Bytes copy(d.begin() + static_cast<std::ptrdiff_t>(at),
                             d.begin() + static_cast<std::ptrdiff_t>(at + n));
            d.insert(d.begin() + static_cast<std::ptrdiff_t>(below(d.size() + 1)), copy.begin(), copy.end());
            break;
        }
        case 7: { // splice: this input's head, another seed's tail
            if (seeds_.empty())
                break;
            const Bytes& other = seeds_[below(seeds_.size())];
            const std::size_t head = below(d.size() + 1);
            const std::size_t tail = below(other.size() + 1);
            d.resize(head);
            d.insert(d.end(), other.begin() + static_cast<std::ptrdiff_t>(tail), other.end());
            break;
        }
        case 8:   // insert a dictionary token
        case 9: { // overwrite with a dictionary token
            if (dict_.empty())
                break;
            const Bytes& token = dict_[below(dict_.size())];
            const std::size_t at = below(d.size() + 1);
            if (below(2) == 0 || at + token.size() > d.size()) {
                d.insert(d.begin() + static_cast<std::ptrdiff_t>(at), token.begin(), token.end());
            } else {
                std::copy(token.begin(), token.end(), d.begin() + static_cast<std::ptrdiff_t>(at));
            }
            break;
        }
        default: { // truncate
            if (!d.empty())
                d.resize(below(d.size()));
            break;
        }
        }
    }

    std::mt19937_64 rng_;
    const std::vector<Bytes>& seeds_;
    const std::vector<Bytes>& dict_;
    std::size_t max_len_;
};

// Runs one input; an exception escaping the target is a finding like a crash.
void run_one(const Bytes& input, unsigned timeout) {
    g_current.data = input.data();
    g_current.size = input.size();
    if (timeout > 0)
        ::alarm(timeout);
    try {
        LLVMFuzzerTestOneInput(input.data(), input.size());
    } catch (const std::exception& e) {
        std::cerr << "==fuzz driver== ERROR: uncaught exception: " << e.what() << "\n";
        save_current(g_current.crash_path, "==fuzz driver== ERROR: uncaught exception");
        std::exit(1);
    } catch (...) {
        save_current(g_current.crash_path, "==fuzz driver== ERROR: uncaught exception of unknown type");
        std::exit(1);
    }
    if (timeout > 0)
        ::alarm(0);
}

} // namespace

int main(int argc, char** argv) {
    const Options options = parse_options(argc, argv);
    const std::string tag = std::to_string(::getpid());
    g_current.crash_path = options.artifact_prefix + "crash-" + tag;
    g_current.timeout_path = options.artifact_prefix + "timeout-" + tag;
    install_handlers();

    std::vector<Bytes> seeds;
    for (const auto& input : options.inputs) {
        std::vector<std::filesystem::path> files;
        std::error_code error;
        if (std::filesystem::is_directory(input, error)) {
            for (const auto& entry : std::filesystem::directory_iterator(input, error))
                if (entry.is_regular_file())
                    files.push_back(entry.path());
            std::sort(files.begin(), files.end()); // a fixed order, so that -seed reproduces a run
        } else {
            files.emplace_back(input);
        }
        for (const auto& file : files) {
            Bytes data;
            if (!read_file(file, data)) {
                std::cerr << "fuzz driver: cannot read " << file.string() << "\n";
                return 2;
            }
            seeds.push_back(std::move(data));
        }
    }
    const std::vector<Bytes> dict = options.dict.empty() ? std::vector<Bytes>{} : read_dict(options.dict);
    std::size_t max_len = options.max_len;
    if (max_len == 0) {
        max_len = 4096;
        for (const auto& s : seeds)
            max_len = std::max(max_len, s.size());
    }
    std::cerr << "fuzz driver (coverage-blind mutation, not libFuzzer): " << seeds.size() << " seeds, "
              << dict.size() << " dictionary tokens, seed " << options.seed << ", max_len " << max_len << ", "
              << options.max_total_time << " s\n";

    const auto start = std::chrono::steady_clock::now();
    long long executed = 0;
    // An empty input first, as libFuzzer does; then every seed as it is.
    run_one({}, options.timeout);
    ++executed;
    for (const auto& s : seeds) {
        run_one(s, options.timeout);
        ++executed;
    }
    std::cerr << "#" << executed << " INITED (every seed replayed)\n";

    Mutator mutator(options.seed, seeds, dict, max_len);
    long long mutations = 0;
    const auto budget = std::chrono::duration<double>(options.max_total_time);
    while (options.runs < 0 || mutations < options.runs) {
        if ((mutations & 15) == 0 && std::chrono::steady_clock::now() - start >= budget)
            break;
        run_one(mutator.next(), options.timeout);
        ++mutations;
        ++executed;
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::cerr << "#" << executed << " DONE   execs: " << executed << " (" << mutations << " mutated) in "
              << seconds << " s, " << static_cast<long long>(executed / std::max(seconds, 1e-9))
              << " exec/s\n"
              << "stat::number_of_executed_units: " << executed << "\n";
    return 0;
}
