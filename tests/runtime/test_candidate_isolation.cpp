// The pieces the candidate's own process rests on: the channel (messages, descriptors, limits), the
// judge's shared buffers, the sandbox (Landlock where the kernel has it) and the process-tree helpers.
#include "candidate_host.h"
#include "channel.h"
#include "device.h"
#include "pkbw/core/candidate_protocol.h"
#include "pkbw/core/error.h"
#include "pkbw/core/status.h"
#include "sandbox.h"
#include "shared_buffers.h"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

using namespace pkbw;
using namespace pkbw::engine;
namespace fs = std::filesystem;

TEST(Channel, CarriesMessagesAndDescriptorsAndRefusesOversizedOnes) {
    auto [parent, child_fd] = Channel::make_pair();
    Channel child(child_fd);
    const int memfd = ::memfd_create("test", MFD_CLOEXEC);
    ASSERT_GE(memfd, 0);
    ASSERT_EQ(::write(memfd, "judge", 5), 5);
    parent.send({{"msg", "map"}, {"buffers", {{{"id", 7}}}}}, {memfd});
    std::vector<int> fds;
    const auto received = child.receive(&fds, 1000);
    ASSERT_TRUE(received);
    EXPECT_EQ((*received)["buffers"][0]["id"], 7);
    ASSERT_EQ(fds.size(), 1u);
    char text[6] = {};
    EXPECT_EQ(::pread(fds[0], text, 5, 0), 5);
    EXPECT_STREQ(text, "judge"); // the same file, through the socket
    ::close(fds[0]);
    ::close(memfd);

    EXPECT_THROW(
        parent.send({{"msg", "x"}, {"blob", std::string(candidate_protocol::kMaxMessageBytes, 'a')}}), Error);
    EXPECT_FALSE(child.receive(nullptr, 50)); // nothing was sent; a timeout, not a close
    EXPECT_FALSE(child.closed());
    // A datagram that is not a JSON object with "msg" is refused, and the next one still reads.
    ASSERT_EQ(::send(parent.fd(), "[1,2]", 5, 0), 5);
    EXPECT_THROW(child.receive(nullptr, 1000), FormatError);
    parent.send({{"msg", "quit"}});
    EXPECT_EQ(child.receive(nullptr, 1000)->value("msg", ""), "quit");
    parent = Channel();
    EXPECT_FALSE(child.receive(nullptr, 1000));
    EXPECT_TRUE(child.closed());
}

TEST(SharedBuffers, LocateFindsTheBufferAndOffsetAndTellsTheListenerBeforeFreeing) {
    auto device = make_host_device(0, "/pkbw-test-shared");
    SharedBuffers shared(*device);
    auto* a = static_cast<char*>(shared.allocate(1000));
    auto* b = static_cast<char*>(shared.allocate(64));
    const auto in_a = shared.locate(a + 100, 900);
    ASSERT_TRUE(in_a);
    EXPECT_EQ(in_a->offset, 100u);
    EXPECT_FALSE(shared.locate(a + 100, 901)); // runs past the end of the buffer
    EXPECT_TRUE(shared.locate(b, 64));
    int stack_value = 0;
    EXPECT_FALSE(shared.locate(&stack_value, sizeof stack_value));
    // Host shared memory is a memfd another process can map: same bytes through a second mapping.
    const SharedAllocation& allocation = shared.allocation(in_a->id);
    ASSERT_GE(allocation.handle.fd, 0);
    auto* second = static_cast<char*>(device->map_shared(allocation.handle, allocation.bytes));
    a[5] = 42;
    EXPECT_EQ(second[5], 42);
    device->unmap_shared(second, allocation.bytes);
    // Every worker that maps the buffers listens (the candidate and the reference's timing worker).
    std::vector<int> released, also;
    shared.add_release_listener([&](int id) { released.push_back(id); });
    const int second_listener = shared.add_release_listener([&](int id) { also.push_back(id); });
    shared.release(a);
    EXPECT_EQ(released, std::vector<int>{in_a->id});
    EXPECT_EQ(also, std::vector<int>{in_a->id});
    EXPECT_FALSE(shared.locate(a, 1));
    shared.remove_release_listener(second_listener);
    shared.release(b);
    EXPECT_EQ(released.size(), 2u);
    EXPECT_EQ(also.size(), 1u);
}

namespace {
// Runs `body` in a forked child under `sandbox`; returns the child's exit code.
int in_sandbox(const Sandbox& sandbox, const std::function<int()>& body) {
    const pid_t pid = ::fork();
    if (pid == 0) {
        const int code = sandbox.apply_in_child();
        ::_exit(code != 0 ? 100 : body());
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 200 + WTERMSIG(status);
}
// A judge of another build (another candidate protocol version) is refused by name before the
// candidate process loads anything (the structure review: the version was sent and never read).
TEST(CandidateHost, AJudgeOfAnotherProtocolVersionIsRefusedByName) {
    auto [judge, child_fd] = Channel::make_pair();
    Channel candidate(child_fd);
    int code = -1;
    std::thread host([&] { code = serve_candidate(candidate); });
    judge.send({{"msg", candidate_protocol::kSetup}, {"version", candidate_protocol::kVersion + 1}});
    const auto reply = judge.receive();
    host.join();
    ASSERT_TRUE(reply.has_value());
    EXPECT_EQ(reply->value("msg", ""), candidate_protocol::kReady);
    EXPECT_FALSE(reply->value("ok", true));
    const std::string versions = "candidate protocol version " +
                                 std::to_string(candidate_protocol::kVersion) + ", its judge version " +
                                 std::to_string(candidate_protocol::kVersion + 1);
    EXPECT_NE(reply->value("message", "").find(versions), std::string::npos) << reply->dump();
    EXPECT_EQ(code, status::kExitEnvironment);
}

} // namespace

TEST(Sandbox, WritesOnlyWhereAllowedAndCannotSignalOutside) {
    std::string why;
    if (landlock_abi_version(&why) == 0) {
        GTEST_SKIP() << "no Landlock on this kernel: " << why;
    }
    const fs::path root = fs::temp_directory_path() / ("pkbw-sandbox-test-" + std::to_string(::getpid()));
    fs::create_directories(root / "allowed");
    fs::create_directories(root / "secret");
    std::ofstream(root / "secret" / "store.db") << "runs";
    SandboxSpec spec;
    spec.read_paths = {"/usr", "/lib", "/lib64", "/etc", "/proc"};
    spec.write_paths = {(root / "allowed").string()};
    const Sandbox sandbox = Sandbox::prepare(spec);
    EXPECT_GT(sandbox.landlock_abi(), 0);
    EXPECT_NE(sandbox.describe().find((root / "allowed").string()), std::string::npos);
    EXPECT_EQ(sandbox.describe().find("/proc/<its pid>"), std::string::npos);
    const std::string allowed = (root / "allowed" / "file").string();
    const std::string secret = (root / "secret" / "store.db").string();
    EXPECT_EQ(in_sandbox(sandbox,
                         [&] {
                             const int fd = ::open(allowed.c_str(), O_CREAT | O_WRONLY, 0600);
                             return fd >= 0 ? 0 : 1;
                         }),
              0);
    // Neither written nor read: the store and the cache live outside the rules.
    EXPECT_EQ(in_sandbox(sandbox,
                         [&] {
                             const int w = ::open(secret.c_str(), O_WRONLY | O_TRUNC);
                             const int r = ::open(secret.c_str(), O_RDONLY);
                             return w < 0 && errno == EACCES && r < 0 ? 0 : 1;
                         }),
              0);
    EXPECT_EQ(fs::file_size(secret), 4u);
    // Its own /proc entry (the CUDA driver writes there), and no other process's.
    SandboxSpec with_proc = spec;
    with_proc.own_proc_writable = true;
    const Sandbox proc_sandbox = Sandbox::prepare(with_proc);
    EXPECT_NE(proc_sandbox.describe().find("/proc/<its pid>"), std::string::npos);
    EXPECT_EQ(in_sandbox(proc_sandbox,
                         [] {
                             const int fd = ::open("/proc/self/comm", O_WRONLY);
                             return fd >= 0 && ::write(fd, "probe", 5) == 5 ? 0 : 1;
                         }),
              0);
    EXPECT_EQ(in_sandbox(sandbox,
                         [] {
                             const int fd = ::open("/proc/self/comm", O_WRONLY);
                             return fd < 0 && errno == EACCES ? 0 : 1;
                         }),
              0);
    if (sandbox.signals_scoped()) {
        const pid_t judge = ::getpid();
        EXPECT_EQ(in_sandbox(sandbox, [&] { return ::kill(judge, SIGKILL) != 0 && errno == EPERM ? 0 : 1; }),
                  0);
    }
    fs::remove_all(root);
}

TEST(ProcessTree, DescendantsAreFoundKilledAndReportedAndCpuIsMeasured) {
    const pid_t child = ::fork();
    if (child == 0) {
        // A grandchild in a session of its own, as a candidate that wants to outlive the run does.
        if (::fork() == 0) {
            ::setsid();
            ::execlp("sleep", "sleep", "600", nullptr);
            ::_exit(1);
        }
        ::pause();
        ::_exit(0);
    }
    // The grandchild is visible from fork() on but shows its command only once exec() has run, so wait for
    // both: two descendants, one of them running "sleep 600".
    std::vector<ProcessInfo> found;
    bool saw_sleep = false;
    for (int i = 0; i < 300 && !(found.size() == 2 && saw_sleep); ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        found = descendants_of(::getpid());
        saw_sleep = false;
        for (const auto& p : found) {
            saw_sleep = saw_sleep || p.command.find("sleep 600") != std::string::npos;
        }
    }
    ASSERT_EQ(found.size(), 2u);
    EXPECT_TRUE(saw_sleep);
    const auto killed = kill_descendants(::getpid());
    EXPECT_EQ(killed.size(), 2u);
    ::waitpid(child, nullptr, WNOHANG);
    EXPECT_TRUE(descendants_of(::getpid()).empty());

    const double before = process_cpu_ms(::getpid());
    volatile double x = 0;
    for (int i = 0; i < 30000000; ++i) {
        x = x + i * 0.5;
    }
    EXPECT_GT(process_cpu_ms(::getpid()), before);
    EXPECT_GE(thread_count(::getpid()), 1);
    EXPECT_LT(process_cpu_ms(999999999), 0);
}
