// A stand-in for pkbw-rank that speaks the control protocol and misbehaves on request, so the
// launcher's watchdog can be tested without GPUs or the real rank program.
// FAKE_RANK_MODE: ok | hang (rank FAKE_RANK_TARGET stops in phase candidate) | segv | exit3 | spam
// (10 MB on stderr) | malformed (garbage on the control pipe, then ok) | shm (leaves a segment) |
// mismatch (rank_result mismatch on the target rank) | segv_after_result (the target faults after
// reporting its trial, before teardown; the others wait in teardown) | nccl_trace (every rank writes a
// trace of one candidate iteration: an NCCL all-reduce kernel on the target, its own kernel elsewhere) |
// bad_candidate_trace (as nccl_trace with no NCCL kernel, and rank 0 leaves in trace/candidate what a
// candidate's process could: a link to a valid trace outside the run, a sparse GiB, garbage) |
// sigterm (the target ends by SIGTERM, as every process of a job does when scancel or kill reaches it) |
// peer_reset (the target exits 3 in rendezvous at once; rank 0 exits 4, a solution error, 0.3 s later) |
// listener (checks the rendezvous socket: rank 0 holds it listening on MASTER_PORT as
// PKBW_RDZV_LISTEN_FD when FAKE_RANK_EXPECT_LISTENER=1, no other rank has it, and nobody else can
// bind the port meanwhile; exits 5 naming what is wrong).
#include "pkbw/core/protocol.h"
#include "pkbw/core/trace.h"

#include <arpa/inet.h>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <netinet/in.h>
#include <string>
#include <sys/socket.h>
#include <unistd.h>

namespace {

int control_fd = -1;

void emit(const std::string& line) {
    std::string text = line + "\n";
    const char* data = text.data();
    std::size_t left = text.size();
    while (left > 0) {
        ssize_t n = ::write(control_fd, data, left);
        if (n <= 0)
            std::_Exit(9);
        data += n;
        left -= static_cast<std::size_t>(n);
    }
}

std::string env(const char* name, const char* fallback = "") {
    const char* value = std::getenv(name);
    return value ? value : fallback;
}

// A trace as the rank program and the CUPTI tracer write it: the engine's candidate iteration range,
// and one kernel inside it.
void write_trace(const std::string& config_path, int rank, const std::string& kernel_name) {
    nlohmann::json config = nlohmann::json::parse(std::ifstream(config_path));
    const std::filesystem::path dir = config.at("trace").at("dir").get<std::string>();
    std::filesystem::create_directories(dir);
    std::int64_t start = 0;
    {
        pkbw::TraceRecorder recorder(dir / ("rank_" + std::to_string(rank) + ".engine.jsonl"), rank);
        recorder.begin_range("iteration", "candidate/0", {{"iteration", 0}, {"side", "candidate"}});
        start = pkbw::trace_now_ns();
        ::usleep(1000);
        recorder.end_range();
    }
    pkbw::TraceEvent kernel;
    kernel.name = kernel_name;
    kernel.start_ns = start + 100;
    kernel.end_ns = start + 500;
    std::ofstream cupti(dir / ("rank_" + std::to_string(rank) + ".cupti.jsonl"));
    cupti << pkbw::trace_header_json(rank, ::getpid(), "cupti").dump() << "\n"
          << pkbw::to_json(kernel).dump() << "\n"
          << nlohmann::json{{"end", true}, {"events", 1}, {"dropped_records", 0}}.dump() << "\n";
}

// What a candidate's process could leave in its trace folder (bad_candidate_trace).
void write_bad_candidate_trace(const std::string& config_path) {
    nlohmann::json config = nlohmann::json::parse(std::ifstream(config_path));
    const std::filesystem::path dir = config.at("trace").at("dir").get<std::string>();
    std::filesystem::create_directories(dir / "candidate");
    // A valid trace of rank 0 outside the run, with an event that must never be stored.
    const std::filesystem::path outside = dir.parent_path().parent_path() / "outside.engine.jsonl";
    {
        pkbw::TraceRecorder secret(outside, 0);
        secret.mark("secret", "secret-event-outside-the-run");
    }
    std::filesystem::create_symlink(outside, dir / "candidate" / "rank_0.engine.jsonl");
    const int sparse = ::open((dir / "candidate" / "rank_1.cupti.jsonl").c_str(), O_CREAT | O_WRONLY, 0600);
    if (sparse < 0 || ::ftruncate(sparse, 1ll << 30) != 0)
        std::_Exit(8);
    ::close(sparse);
    std::ofstream(dir / "candidate" / "rank_1.engine.jsonl") << "{\"format\": garbage\n";
}

// The "listener" mode's checks; empty when all hold.
std::string listener_problem(int rank) {
    const bool expected = rank == 0 && env("FAKE_RANK_EXPECT_LISTENER") == "1";
    const std::string named = env("PKBW_RDZV_LISTEN_FD");
    const int port = std::atoi(env("MASTER_PORT").c_str());
    if (!expected) {
        if (!named.empty())
            return "PKBW_RDZV_LISTEN_FD=" + named + " reached a rank that should not have it";
        if (::fcntl(4, F_GETFD) >= 0)
            return "descriptor 4 is open";
    } else {
        if (named != "4")
            return "PKBW_RDZV_LISTEN_FD is '" + named + "', expected 4";
        sockaddr_in bound{};
        socklen_t length = sizeof bound;
        int listening = 0;
        socklen_t flag_length = sizeof listening;
        if (::getsockname(4, reinterpret_cast<sockaddr*>(&bound), &length) != 0 ||
            ::getsockopt(4, SOL_SOCKET, SO_ACCEPTCONN, &listening, &flag_length) != 0 || listening == 0)
            return "descriptor 4 is not a listening socket";
        if (ntohs(bound.sin_port) != port)
            return "descriptor 4 listens on " + std::to_string(ntohs(bound.sin_port)) + ", not MASTER_PORT";
        // Another process of the machine trying the same port now: refused.
        const int other = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in address{};
        address.sin_family = AF_INET;
        address.sin_port = htons(static_cast<std::uint16_t>(port));
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        const bool took = ::bind(other, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0;
        const int code = errno;
        ::close(other);
        if (took || code != EADDRINUSE)
            return "another socket could bind MASTER_PORT while rank 0 holds it";
    }
    return {};
}

} // namespace

int main(int argc, char** argv) {
    control_fd = std::atoi(env("PKBW_CONTROL_FD", "-1").c_str());
    int rank = std::atoi(env("RANK", "0").c_str());
    int world = std::atoi(env("WORLD_SIZE", "1").c_str());
    int target = std::atoi(env("FAKE_RANK_TARGET", "1").c_str());
    std::string mode = env("FAKE_RANK_MODE", "ok");
    bool me = rank == target;
    std::string r = std::to_string(rank);
    if (control_fd < 0 || env("PKBW_RDZV_TOKEN").size() != 32 || env("MASTER_PORT").empty()) {
        std::fprintf(stderr, "fake rank %d: environment incomplete\n", rank);
        return 5;
    }
    if (mode == "listener") {
        if (const std::string problem = listener_problem(rank); !problem.empty()) {
            std::fprintf(stderr, "fake rank %d: %s\n", rank, problem.c_str());
            return 5;
        }
    }
    if (mode == "malformed")
        emit("this is not json {");
    if (mode == "nccl_trace" && argc == 3)
        write_trace(argv[2], rank, me ? "ncclDevKernel_AllReduce_Sum_bf16_RING_LL" : "my_allreduce_kernel");
    if (mode == "bad_candidate_trace" && argc == 3) {
        write_trace(argv[2], rank, "my_allreduce_kernel");
        if (rank == 0)
            write_bad_candidate_trace(argv[2]);
    }
    emit(R"({"event":"hello","rank":)" + r + R"(,"world_size":)" + std::to_string(world) + R"(,"pid":)" +
         std::to_string(::getpid()) +
         R"(,"host":"testhost","backend":"host","device":"host","nccl_runtime":"","nccl_compiled":""})");
    for (const char* phase : {"rendezvous", "inputs", "reference", "candidate"}) {
        emit(R"({"event":"phase","rank":)" + r + R"(,"phase":")" + phase + R"(","trial":0})");
    }
    if (mode == "shm") {
        std::string name = "/dev/shm/pkbw-" + env("PKBW_SEGMENT_TAG") + "-r" + r;
        int fd = ::open(name.c_str(), O_CREAT | O_WRONLY, 0600);
        if (fd >= 0)
            ::close(fd);
    }
    if (me && mode == "hang") {
        std::fprintf(stderr, "rank %d spinning in candidate\n", rank);
        while (true)
            ::pause();
    }
    if (me && mode == "segv") {
        std::fprintf(stderr, "rank %d about to fault\n", rank);
        std::raise(SIGSEGV);
    }
    if (me && mode == "sigterm") {
        std::fprintf(stderr, "rank %d terminated\n", rank);
        std::signal(SIGTERM, SIG_DFL);
        std::raise(SIGTERM);
    }
    if (me && mode == "exit0") { // a solution calling exit(0): a clean code, but no result
        std::fprintf(stderr, "rank %d leaving early\n", rank);
        return 0;
    }
    // A peer's consequence seen first: the target fails its rendezvous at once ("Connection reset by
    // peer", exit 3) because rank 0's candidate raised and its process left; rank 0's judge reports that
    // cause and exits 4 a moment later (on a loaded host the order is this one).
    if (mode == "peer_reset") {
        if (me) {
            emit(
                R"({"event":"error","rank":)" + r +
                R"(,"phase":"rendezvous","kind":"environment","message":"init_process_group failed: Connection reset by peer"})");
            return 3;
        }
        if (rank == 0) {
            ::usleep(300'000);
            emit(
                R"({"event":"error","rank":0,"phase":"candidate","kind":"solution_error","message":"candidate raised NameError"})");
            return 4;
        }
    }
    if (me && mode == "exit3") {
        emit(R"({"event":"error","rank":)" + r +
             R"(,"phase":"rendezvous","kind":"environment","message":"no GPU visible"})");
        return 3;
    }
    if (mode == "spam") {
        std::string line(99, 'x');
        line += '\n';
        for (int i = 0; i < 100000; ++i)
            std::fwrite(line.data(), 1, line.size(), stderr);
    }
    // The other ranks wait "in a collective" for the broken one: forever, unless it is fine.
    if ((mode == "hang" || mode == "segv" || mode == "exit3" || mode == "exit0" || mode == "sigterm" ||
         mode == "peer_reset") &&
        !me) {
        emit(R"({"event":"phase","rank":)" + r + R"(,"phase":"compare","trial":0})");
        while (true)
            ::pause();
    }
    emit(R"({"event":"phase","rank":)" + r + R"(,"phase":"compare","trial":0})");
    std::string status = (mode == "mismatch" && me) ? "mismatch" : "pass";
    pkbw::TensorComparison tensor;
    tensor.name = "output";
    tensor.pass = status == "pass";
    tensor.shape_match = tensor.dtype_match = true;
    tensor.ref_shape = tensor.cand_shape = {2, 2};
    tensor.numel = 4;
    tensor.mismatch_count = tensor.pass ? 0 : 2;
    tensor.mismatch_fraction = tensor.pass ? 0 : 0.5;
    tensor.max_abs_error = 0.5;
    tensor.max_rel_error = 0.25;
    nlohmann::json result = {{"event", "rank_result"},
                             {"rank", rank},
                             {"trial", 0},
                             {"status", status},
                             {"message", ""},
                             {"tensors", {pkbw::protocol::to_json(tensor)}},
                             {"guard_violations", nlohmann::json::array()},
                             {"mutated_inputs", nlohmann::json::array()},
                             {"outputs", nlohmann::json::object()}};
    std::string line = pkbw::protocol::to_line(result);
    line.pop_back();
    emit(line);
    if (mode == "segv_after_result") {
        // The target faults only once every other rank has reported: otherwise the launcher may stop
        // a rank before its result, and the test would see "skipped" where it expects "ok".
        const std::string marker = "/tmp/pkbw-fake-rank-" + env("PKBW_RDZV_TOKEN") + "-reported-";
        if (!me) {
            ::close(::open((marker + r).c_str(), O_CREAT | O_WRONLY, 0600));
        } else {
            for (int other = 0; other < world; ++other) {
                const std::string path = marker + std::to_string(other);
                for (int wait = 0; other != rank && wait < 2000 && ::access(path.c_str(), F_OK) != 0; ++wait)
                    ::usleep(5000);
                ::unlink(path.c_str());
            }
            std::fprintf(stderr, "rank %d about to fault after its result\n", rank);
            std::raise(SIGSEGV);
        }
    }
    emit(R"({"event":"phase","rank":)" + r + R"(,"phase":"teardown","trial":0})");
    if (mode == "segv_after_result") {
        while (true) // the teardown barrier the faulted rank never reaches
            ::pause();
    }
    emit(R"({"event":"rank_done","rank":)" + r + R"(,"trials_run":1})");
    return 0;
}
