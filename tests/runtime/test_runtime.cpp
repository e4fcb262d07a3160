// The rank runtime's pieces, with ranks as threads of one process (each has its own rendezvous
// client and host device, exactly as separate processes would).
#include "device.h"
#include "loopback.h"
#include "pkbw/core/error.h"
#include "pkbw/core/rank_config.h"
#include "rendezvous.h"
#include "trial_buffers.h"

#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <functional>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

using namespace pkbw;
using namespace pkbw::engine;

namespace {

int free_port() {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
    socklen_t length = sizeof(addr);
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &length);
    ::close(fd);
    return ntohs(addr.sin_port);
}

// Runs body(rank, rendezvous) on `world` threads joined to one rendezvous.
void run_ranks(int world, const std::function<void(int, Rendezvous&)>& body) {
    const int port = free_port();
    std::vector<std::thread> threads;
    std::vector<std::string> failures(world);
    for (int r = 0; r < world; ++r) {
        threads.emplace_back([&, r] {
            try {
                RendezvousConfig config{r, world, "127.0.0.1", port, "secret-token", 10};
                auto rendezvous = Rendezvous::join(config);
                body(r, *rendezvous);
            } catch (const std::exception& e) {
                failures[r] = e.what();
            }
        });
    }
    for (auto& t : threads) {
        t.join();
    }
    for (int r = 0; r < world; ++r) {
        EXPECT_EQ(failures[r], "") << "rank " << r;
    }
}

std::span<const std::byte> bytes_of(const std::string& s) {
    return std::as_bytes(std::span(s.data(), s.size()));
}

} // namespace

TEST(Rendezvous, AllGatherReturnsContributionsInRankOrder) {
    run_ranks(4, [](int rank, Rendezvous& rendezvous) {
        for (int round = 0; round < 20; ++round) {
            const std::string mine(static_cast<std::size_t>(rank + round % 3), static_cast<char>('a' + rank));
            const auto all = rendezvous.all_gather(bytes_of(mine));
            ASSERT_EQ(all.size(), 4u);
            for (int r = 0; r < 4; ++r) {
                const std::string expected(static_cast<std::size_t>(r + round % 3),
                                           static_cast<char>('a' + r));
                ASSERT_EQ(std::string(reinterpret_cast<const char*>(all[r].data()), all[r].size()), expected);
            }
        }
        rendezvous.barrier();
    });
}

TEST(Rendezvous, BarrierHoldsEveryRankUntilAllArrive) {
    std::atomic<int> arrived{0};
    run_ranks(3, [&](int rank, Rendezvous& rendezvous) {
        if (rank == 2) {
            std::this_thread::sleep_for(std::chrono::milliseconds(200));
        }
        arrived++;
        rendezvous.barrier();
        EXPECT_EQ(arrived.load(), 3);
    });
}

TEST(Rendezvous, WrongTokenIsRefused) {
    const int port = free_port();
    std::thread server([&] {
        // Rank 0 of a two-rank group: waits for a partner that never authenticates. It is left
        // blocked in its first collective; detach it, the process ends with the test binary.
        try {
            auto rendezvous = Rendezvous::join({0, 2, "127.0.0.1", port, "right", 10});
            rendezvous->barrier();
        } catch (...) {
        }
    });
    server.detach();
    try {
        Rendezvous::join({1, 2, "127.0.0.1", port, "wrong", 5});
        FAIL() << "a wrong token was accepted";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("refused rank 1"), std::string::npos) << e.what();
    }
}

// The launcher's socket, adopted by rank 0's server: the port is never free in between (another
// socket cannot bind it), and the ranks meet on it as on a port rank 0 bound itself.
TEST(Rendezvous, AdoptedListenerHoldsThePortAndTheRanksMeet) {
    LoopbackListener listener = LoopbackListener::open(8);
    const int port = listener.port();
    const int other = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<std::uint16_t>(port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_NE(::bind(other, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
    EXPECT_EQ(errno, EADDRINUSE);
    ::close(other);
    const int adopted = ::dup(listener.fd()); // the server owns (and closes) what it adopts
    listener.close();
    std::vector<std::thread> threads;
    std::vector<std::string> seen(3), failures(3);
    for (int r = 0; r < 3; ++r) {
        threads.emplace_back([&, r] {
            try {
                RendezvousConfig config{r, 3, "127.0.0.1", port, "held", 10};
                config.listen_fd = r == 0 ? adopted : -1;
                auto rendezvous = Rendezvous::join(config);
                const std::string mine(1, static_cast<char>('a' + r));
                for (const auto& part : rendezvous->all_gather(bytes_of(mine))) {
                    seen[r] += std::string(reinterpret_cast<const char*>(part.data()), part.size());
                }
            } catch (const std::exception& e) {
                failures[r] = e.what();
            }
        });
    }
    for (auto& t : threads) {
        t.join();
    }
    for (int r = 0; r < 3; ++r) {
        EXPECT_EQ(failures[r], "") << "rank " << r;
        EXPECT_EQ(seen[r], "abc") << "rank " << r;
    }
}

// A listening socket nobody serves (rank 0 died, or hangs, before its server adopted it): the other
// ranks' connections are queued, and their wait for an answer ends at the deadline, by name.
TEST(Rendezvous, ListenerThatNobodyServesEndsAtTheDeadline) {
    LoopbackListener listener = LoopbackListener::open(8);
    const auto start = std::chrono::steady_clock::now();
    try {
        Rendezvous::join({1, 2, "127.0.0.1", listener.port(), "t", 1.0});
        FAIL() << "joined a rendezvous nobody serves";
    } catch (const RendezvousError& e) {
        EXPECT_NE(std::string(e.what()).find("did not answer rank 1"), std::string::npos) << e.what();
    }
    const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_GE(waited, 0.9);
    EXPECT_LT(waited, 5.0);
}

// A descriptor that is not the rendezvous port's listening socket is refused by name, not waited on.
TEST(Rendezvous, ListenerOnAnotherPortOrNotListeningIsAnEnvironmentError) {
    LoopbackListener listener = LoopbackListener::open(8);
    const int elsewhere = listener.port() == 65535 ? listener.port() - 1 : listener.port() + 1;
    RendezvousConfig config{0, 1, "127.0.0.1", elsewhere, "t", 1};
    config.listen_fd = ::dup(listener.fd());
    try {
        Rendezvous::join(config);
        FAIL() << "a listener on another port was adopted";
    } catch (const RendezvousError& e) {
        EXPECT_NE(std::string(e.what()).find("not the rendezvous port"), std::string::npos) << e.what();
    }
    config.port = listener.port();
    config.listen_fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0); // never listened
    try {
        Rendezvous::join(config);
        FAIL() << "a socket that does not listen was adopted";
    } catch (const RendezvousError& e) {
        EXPECT_NE(std::string(e.what()).find("not a listening TCP socket"), std::string::npos) << e.what();
    }
}

// MASTER_ADDR may be a host name (issue 17): resolved with getaddrinfo. "localhost" is in every
// /etc/hosts; the config is passed directly, so the environment's own localhost shortcut is not used.
TEST(Rendezvous, HostNameIsResolved) {
    const int port = free_port();
    std::vector<std::thread> threads;
    std::vector<std::string> failures(2);
    for (int r = 0; r < 2; ++r) {
        threads.emplace_back([&, r] {
            try {
                auto rendezvous = Rendezvous::join({r, 2, "localhost", port, "tok", 10});
                rendezvous->barrier();
            } catch (const std::exception& e) {
                failures[r] = e.what();
            }
        });
    }
    for (auto& t : threads) {
        t.join();
    }
    EXPECT_EQ(failures[0], "");
    EXPECT_EQ(failures[1], "");
}

TEST(Rendezvous, UnresolvableHostIsAnEnvironmentError) {
    try {
        Rendezvous::join({0, 1, "no-such-host.invalid", 1, "t", 1});
        FAIL() << "an unresolvable MASTER_ADDR was accepted";
    } catch (const RendezvousError& e) {
        EXPECT_NE(std::string(e.what()).find("'no-such-host.invalid' does not resolve"), std::string::npos)
            << e.what();
    }
}

TEST(Rendezvous, UnreachableRankZeroIsAnEnvironmentError) {
    // Rank 1 of 2 with nobody listening: RendezvousError (the rank exits 3), after its retry window.
    EXPECT_THROW(Rendezvous::join({1, 2, "127.0.0.1", free_port(), "t", 0.3}), RendezvousError);
}

TEST(Rendezvous, RankOutsideWorldIsAnError) {
    EXPECT_THROW(Rendezvous::join({3, 2, "127.0.0.1", 1, "t", 1}), Error);
}

TEST(HostSymmetricMemory, PeersSeeEachOthersBuffersAndPadsStartZeroed) {
    run_ranks(3, [](int rank, Rendezvous& rendezvous) {
        auto device = make_host_device(rank, "/pkbw-test-" + std::to_string(::getpid()));
        const SymmetricAllocation a = device->allocate_symmetric(64, rendezvous);
        ASSERT_EQ(a.peers.size(), 3u);
        for (int r = 0; r < 3; ++r) {
            EXPECT_EQ(a.signal_pads[r][0], 0u);
            EXPECT_EQ(a.signal_pads[r][kSignalPadWords - 1], 0u);
        }
        static_cast<int*>(a.peers[rank])[0] = 100 + rank;
        rendezvous.barrier();
        for (int r = 0; r < 3; ++r) {
            EXPECT_EQ(static_cast<int*>(a.peers[r])[0], 100 + r);
        }
        rendezvous.barrier();
    });
}

TEST(TrialBuffers, GuardsCatchWritesPastEitherEndAndInputsAreWatched) {
    auto device = make_host_device(0, "/pkbw-test-guards");
    SharedBuffers shared(*device);
    Tensor input = Tensor::zeros(DType::F32, {4});
    input.mutable_data_as<float>()[2] = 7.0f;
    TrialBuffers buffers(shared, {{"x", DType::F32, {4}}}, {input}, {{"out", DType::F32, {8}}});
    buffers.prepare();
    EXPECT_TRUE(buffers.check_guards().empty());
    EXPECT_TRUE(buffers.changed_inputs().empty());
    // Unwritten outputs hold the poison pattern (NaN for floats).
    const OutputSet untouched = buffers.download_outputs();
    EXPECT_TRUE(std::isnan(untouched.tensors[0].tensor.get_f32(0)));

    auto* out = static_cast<std::uint8_t*>(buffers.output_views()[0].data);
    out[8 * 4 + 3] = 0; // 4 bytes past the end (offset 3 from the end)
    out[-1] = 0;        // the byte just before the start
    static_cast<float*>(buffers.input_views()[0].data)[1] = 1.0f;
    const auto violations = buffers.check_guards();
    ASSERT_EQ(violations.size(), 2u);
    EXPECT_TRUE(violations[0].before);
    EXPECT_EQ(violations[0].offset, 1u);
    EXPECT_FALSE(violations[1].before);
    EXPECT_EQ(violations[1].offset, 3u);
    EXPECT_NE(violations[1].describe().find("past the end of output 'out'"), std::string::npos);
    const auto changed = buffers.changed_inputs();
    ASSERT_EQ(changed.size(), 1u);
    EXPECT_EQ(changed[0], "x (2 bytes changed)"); // 0.0f -> 1.0f flips two bytes (0x3F80 0000)
    buffers.prepare();                            // restores the input, re-arms guards
    EXPECT_TRUE(buffers.check_guards().empty());
    EXPECT_TRUE(buffers.changed_inputs().empty());
}

TEST(RankConfig, ParsesAndNamesBadFields) {
    const auto ok = parse_rank_config(
        nlohmann::json::parse(
            R"({"problem":"2_allgather","world_size":2,"output_dir":"/tmp/x","dtype":"bfloat16",
            "reference_library":"r.so","candidate_library":"c.so","perf":{"pairs":3}})"),
        "config.json");
    EXPECT_EQ(ok.dtype, DType::BF16);
    EXPECT_TRUE(ok.perf);
    EXPECT_EQ(ok.trials, 5);
    auto expect_error = [](const char* text, const char* field) {
        try {
            parse_rank_config(nlohmann::json::parse(text), "config.json");
            ADD_FAILURE() << "accepted " << text;
        } catch (const FormatError& e) {
            EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
            EXPECT_EQ(std::string(e.what()).rfind("config.json", 0), 0u) << e.what();
        }
    };
    expect_error(R"({"world_size":2,"output_dir":"/x"})", "'problem'");
    expect_error(R"({"problem":"1","world_size":2,"output_dir":"/x","dtype":"bf17"})", "'dtype'");
    expect_error(R"({"problem":"1","world_size":"two","output_dir":"/x"})", "'world_size'");
    expect_error(R"({"problem":"1","world_size":2,"output_dir":"/x","mode":"race"})", "'mode'");
    expect_error(R"({"problem":"1","world_size":2,"output_dir":"/x","reference_library":"r"})",
                 "'candidate_library'");
    expect_error(R"({"problem":"1","world_size":2,"output_dir":"/x","trials":0})", "'trials'");
}
