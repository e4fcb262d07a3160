// ctx.sub_comm, the group-aware host all-gather and ctx.param_list on the host backend, with ranks as
// threads of one process (each its own rendezvous client, host device and solution session, as
// separate processes would have), at W = 2 and W = 4. The candidate's own process uses the same
// SolutionSession (engine.EndToEnd.SubCommsInTheCandidateProcess runs them through pkbw-candidate).
#include "device.h"
#include "pkbw/core/error.h"
#include "pkbw/core/problem.h"
#include "pkbw/toolkit/host.h"
#include "rendezvous.h"
#include "solution_library.h"
#include "sub_comm.h"

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

// Runs body(ctx) on `world` threads, each with its own session over a host device.
void run_sessions(int world, const std::map<std::string, double>& params,
                  const std::function<void(const Context&)>& body) {
    const int port = free_port();
    std::vector<std::thread> threads;
    std::vector<std::string> failures(world);
    for (int r = 0; r < world; ++r) {
        threads.emplace_back([&, r] {
            try {
                auto rendezvous = Rendezvous::join({r, world, "127.0.0.1", port, "sub-comm-test", 10});
                auto device = make_host_device(r, "/pkbw-test-subcomm-" + std::to_string(::getpid()));
                SolutionSession session("candidate", *device, *rendezvous, params);
                const std::vector<TensorView> none;
                const Context ctx = session.make_context(r, none, none);
                body(ctx);
            } catch (const std::exception& e) {
                failures[r] = e.what();
            }
        });
    }
    for (auto& t : threads)
        t.join();
    for (int r = 0; r < world; ++r)
        EXPECT_EQ(failures[r], "") << "rank " << r;
}

std::vector<int> ranks_of(const SubComm& g) {
    return std::vector<int>(g.ranks, g.ranks + g.size);
}

std::vector<SubCommLayout> same(int world, SubCommLayout layout) {
    return std::vector<SubCommLayout>(static_cast<std::size_t>(world), layout);
}

} // namespace

// PKB's layouts (48's _make_tp_fsdp_groups, 22's _build_ep_fsdp_groups) at W = 4 with 2 × 2.
TEST(SubCommGroups, BlocksAndStridedAreConsecutiveAndStridedRanks) {
    const auto blocks = same(4, {SubCommKind::Blocks, 2, 0});
    const auto strided = same(4, {SubCommKind::Strided, 2, 0});
    const std::vector<std::vector<int>> block_groups = {{0, 1}, {0, 1}, {2, 3}, {2, 3}};
    const std::vector<std::vector<int>> strided_groups = {{0, 2}, {1, 3}, {0, 2}, {1, 3}};
    for (int r = 0; r < 4; ++r) {
        const SubCommGroup b = sub_comm_group(blocks, r), s = sub_comm_group(strided, r);
        EXPECT_EQ(b.ranks, block_groups[r]) << r;
        EXPECT_EQ(b.rank, r % 2);
        EXPECT_EQ(b.group, r / 2);
        EXPECT_EQ(b.groups, 2);
        EXPECT_EQ(s.ranks, strided_groups[r]) << r;
        EXPECT_EQ(s.rank, r / 2);
        EXPECT_EQ(s.group, r % 2);
        EXPECT_EQ(s.groups, 2);
    }
    // The degenerate layouts: one group of everyone, or W singletons.
    EXPECT_EQ(sub_comm_group(same(4, {SubCommKind::Blocks, 4, 0}), 3).ranks, (std::vector<int>{0, 1, 2, 3}));
    EXPECT_EQ(sub_comm_group(same(4, {SubCommKind::Strided, 4, 0}), 3).ranks, (std::vector<int>{3}));
}

TEST(SubCommGroups, SplitOrdersByKeyThenRank) {
    // Colors 0, 1, 0, 1; keys put rank 2 before rank 0 in color 0.
    const std::vector<SubCommLayout> layouts = {{SubCommKind::Split, 0, 5},
                                                {SubCommKind::Split, 1, 0},
                                                {SubCommKind::Split, 0, 1},
                                                {SubCommKind::Split, 1, 0}};
    const SubCommGroup g0 = sub_comm_group(layouts, 0), g3 = sub_comm_group(layouts, 3);
    EXPECT_EQ(g0.ranks, (std::vector<int>{2, 0}));
    EXPECT_EQ(g0.rank, 1);
    EXPECT_EQ(g0.groups, 2);
    EXPECT_EQ(g3.ranks, (std::vector<int>{1, 3}));
    EXPECT_EQ(g3.rank, 1);
    EXPECT_EQ(g3.group, 1);
}

TEST(SubCommGroups, BadLayoutsNameTheRankAndLayout) {
    auto message = [](const std::vector<SubCommLayout>& layouts, int rank) {
        try {
            sub_comm_group(layouts, rank);
        } catch (const Error& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    EXPECT_NE(message(same(4, {SubCommKind::Blocks, 3, 0}), 0).find("blocks(3) does not tile a world of 4"),
              std::string::npos);
    EXPECT_NE(message(same(2, {SubCommKind::Strided, 0, 0}), 0).find("strided(0)"), std::string::npos);
    std::vector<SubCommLayout> mixed = same(2, {SubCommKind::Blocks, 2, 0});
    mixed[1] = {SubCommKind::Strided, 2, 0};
    EXPECT_NE(message(mixed, 0).find("rank 0 asked for blocks(2), rank 1 for strided(2)"), std::string::npos)
        << message(mixed, 0);
    EXPECT_NE(message({{SubCommKind::Split, -1, 0}, {SubCommKind::Split, 0, 0}}, 1).find("rank 0 passed"),
              std::string::npos);
}

class SubCommSessions : public ::testing::TestWithParam<int> {};

// Through the ABI: the groups, the cache (same pointers on the second call), and the group all-gather.
TEST_P(SubCommSessions, ServicesGroupAndExchangeWithinTheGroup) {
    const int world = GetParam();
    run_sessions(world, {}, [&](const Context& ctx) {
        const int half = world / 2;
        const SubComm tp = ctx.sub_comm_blocks(half);
        const SubComm fsdp = ctx.sub_comm_strided(half);
        EXPECT_EQ(tp.size, half);
        EXPECT_EQ(tp.rank, ctx.rank % half);
        EXPECT_EQ(tp.world_rank(0), ctx.rank / half * half);
        EXPECT_EQ(fsdp.size, 2);
        EXPECT_EQ(fsdp.world_rank(fsdp.rank), ctx.rank);
        EXPECT_EQ(tp.nccl_handle, nullptr); // the host backend has no NCCL
        const SubComm again = ctx.sub_comm_blocks(half);
        EXPECT_EQ(again.ranks, tp.ranks) << "a layout is cached";

        // Group all-gathers of a rank-dependent value: each member's value in group order.
        const int mine = 100 + ctx.rank;
        std::vector<int> in_tp(static_cast<std::size_t>(tp.size)),
            in_fsdp(static_cast<std::size_t>(fsdp.size));
        ctx.all_gather_host(tp, &mine, sizeof mine, in_tp.data());
        ctx.all_gather_host(fsdp, &mine, sizeof mine, in_fsdp.data());
        for (int i = 0; i < tp.size; ++i)
            EXPECT_EQ(in_tp[i], 100 + tp.world_rank(i));
        for (int i = 0; i < fsdp.size; ++i)
            EXPECT_EQ(in_fsdp[i], 100 + fsdp.world_rank(i));

        // A split by parity, reversed by key.
        const SubComm parity = ctx.sub_comm_split(ctx.rank % 2, -ctx.rank);
        EXPECT_EQ(parity.size, world / 2);
        EXPECT_EQ(parity.world_rank(0), world - 2 + ctx.rank % 2);
    });
}

TEST_P(SubCommSessions, DisagreeingRanksFailOnEveryRankInsteadOfHanging) {
    const int world = GetParam();
    const int port = free_port();
    std::vector<std::thread> threads;
    std::vector<std::string> errors(world);
    for (int r = 0; r < world; ++r) {
        threads.emplace_back([&, r] {
            auto rendezvous = Rendezvous::join({r, world, "127.0.0.1", port, "sub-comm-test", 10});
            auto device = make_host_device(r, "/pkbw-test-subcomm-bad-" + std::to_string(::getpid()));
            SolutionSession session("reference", *device, *rendezvous, {});
            const std::vector<TensorView> none;
            const Context ctx = session.make_context(r, none, none);
            try {
                ctx.sub_comm_blocks(r == 1 ? 1 : 2);
            } catch (const Error& e) {
                errors[r] = e.what();
            }
        });
    }
    for (auto& t : threads)
        t.join();
    for (int r = 0; r < world; ++r)
        EXPECT_NE(errors[r].find("reference: ctx.sub_comm: ranks disagree on the layout"), std::string::npos)
            << r << ": " << errors[r];
}

TEST_P(SubCommSessions, ListParamsRoundTrip) {
    std::map<std::string, double> params{{"eps", 1e-5}};
    add_list_param(params, "counts", {3, 1, 4, 1});
    add_list_param(params, "empty", {});
    run_sessions(GetParam(), params, [](const Context& ctx) {
        double values[8] = {};
        EXPECT_EQ(ctx.param_list("counts", values, 8), 4);
        EXPECT_EQ(std::vector<double>(values, values + 4), (std::vector<double>{3, 1, 4, 1}));
        double two[2] = {};
        EXPECT_EQ(ctx.param_list("counts", two, 2), 4) << "the length, even beyond capacity";
        EXPECT_EQ(two[1], 1);
        EXPECT_EQ(ctx.param_list("empty", values, 8), 0);
        EXPECT_EQ(ctx.param_list("missing", values, 8), -1);
        EXPECT_EQ(ctx.param("eps", 0), 1e-5);
    });
}

// The toolkit's host all-to-all with uneven per-peer counts: rank r sends r + p + 1 ints to peer p.
TEST_P(SubCommSessions, ToolkitAllToAllVHost) {
    const int world = GetParam();
    run_sessions(world, {}, [&](const Context& ctx) {
        std::vector<long long> counts;
        std::vector<int> send;
        for (int p = 0; p < world; ++p) {
            counts.push_back(ctx.rank + p + 1);
            for (int i = 0; i < ctx.rank + p + 1; ++i)
                send.push_back(1000 * ctx.rank + 10 * p + i);
        }
        const std::vector<std::byte> recv =
            pkbw::tk::all_to_all_v_host(ctx, send.data(), counts, sizeof(int));
        std::vector<int> expected;
        for (int src = 0; src < world; ++src)
            for (int i = 0; i < src + ctx.rank + 1; ++i)
                expected.push_back(1000 * src + 10 * ctx.rank + i);
        ASSERT_EQ(recv.size(), expected.size() * sizeof(int));
        std::vector<int> got(expected.size());
        std::memcpy(got.data(), recv.data(), recv.size());
        EXPECT_EQ(got, expected);
        EXPECT_EQ(pkbw::tk::all_reduce_sum_f64(ctx, {1.0 * ctx.rank})[0], world * (world - 1) / 2.0);
    });
}

INSTANTIATE_TEST_SUITE_P(World, SubCommSessions, ::testing::Values(2, 4));
