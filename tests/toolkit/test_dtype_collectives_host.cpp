// The host oracles' rounded all-reduce (dtype_collectives_host.h) gathers a chunk at a time: the
// result must be the whole-tensor sum's, element for element, for every slice a rank asks for.
#include "pkbw/toolkit/dtype_collectives_host.h"

#include <barrier>
#include <cstring>
#include <gtest/gtest.h>
#include <thread>

using namespace pkbw;

namespace {

// W ranks on threads, exchanging through one table: what the engine's host all-gather does.
struct Exchange {
    explicit Exchange(int world)
        : sync(world)
        , slots(static_cast<std::size_t>(world)) {}
    std::barrier<> sync;
    std::vector<std::vector<std::byte>> slots;
    int gathers = 0; // rank 0's count of all-gathers
};

void all_gather(const Context* ctx, const void* send, std::size_t bytes, void* recv) {
    auto& x = *static_cast<Exchange*>(ctx->engine);
    const auto* bytes_in = static_cast<const std::byte*>(send);
    x.slots[static_cast<std::size_t>(ctx->rank)].assign(bytes_in, bytes_in + bytes);
    x.sync.arrive_and_wait();
    for (int r = 0; r < ctx->world_size; ++r) {
        std::memcpy(static_cast<std::byte*>(recv) + static_cast<std::size_t>(r) * bytes,
                    x.slots[static_cast<std::size_t>(r)].data(), bytes);
    }
    x.gathers += ctx->rank == 0;
    x.sync.arrive_and_wait();
}

std::vector<double> rank_values(int rank, std::size_t n) {
    std::vector<double> v(n);
    for (std::size_t i = 0; i < n; ++i) {
        v[i] = 1.0 / (1.0 + static_cast<double>((i * 7 + static_cast<std::size_t>(rank) * 13) % 29)) *
               (rank + 1);
    }
    return v;
}

// Every rank's result of all_reduce_sum_rounded(begin = rank x slice, count = slice, chunk).
std::vector<std::vector<double>> run(int world, std::size_t n, std::size_t slice, std::size_t chunk,
                                     int* gathers = nullptr) {
    Exchange exchange(world);
    Services services{};
    services.all_gather_host = all_gather;
    std::vector<std::vector<double>> results(static_cast<std::size_t>(world));
    std::vector<std::thread> ranks;
    for (int r = 0; r < world; ++r) {
        ranks.emplace_back([&, r] {
            Context ctx{};
            ctx.rank = r;
            ctx.world_size = world;
            ctx.device = -1;
            ctx.services = &services;
            ctx.engine = &exchange;
            results[static_cast<std::size_t>(r)] = tk::all_reduce_sum_rounded(
                ctx, DType::BF16, rank_values(r, n), static_cast<std::size_t>(r) * slice, slice, chunk);
        });
    }
    for (auto& t : ranks) {
        t.join();
    }
    if (gathers != nullptr) {
        *gathers = exchange.gathers;
    }
    return results;
}

} // namespace

TEST(RoundedAllReduce, ChunkedGathersGiveTheWholeTensorsSumForEverySlice) {
    const int world = 3;
    const std::size_t n = 50, slice = 16; // slices cross chunk boundaries; the last 2 elements are no one's
    int gathers = 0;
    const auto whole = run(world, n, slice, n);
    const auto chunked = run(world, n, slice, 7, &gathers);
    EXPECT_EQ(gathers, 8); // ceil(50 / 7): every rank gathers every chunk, whatever its slice
    for (int r = 0; r < world; ++r) {
        ASSERT_EQ(chunked[static_cast<std::size_t>(r)].size(), slice);
        EXPECT_EQ(chunked[static_cast<std::size_t>(r)], whole[static_cast<std::size_t>(r)]) << "rank " << r;
        // Against the model itself: rank order, rounded to bf16 after each addition.
        for (std::size_t i = 0; i < slice; ++i) {
            const std::size_t e = static_cast<std::size_t>(r) * slice + i;
            double sum = rank_values(0, n)[e];
            for (int q = 1; q < world; ++q) {
                sum = tk::round_to(DType::BF16, sum + rank_values(q, n)[e]);
            }
            EXPECT_EQ(chunked[static_cast<std::size_t>(r)][i], sum) << "rank " << r << " element " << e;
        }
    }
}

TEST(RoundedAllReduce, AWholeAllReduceAndAnEmptyOne) {
    const auto all = run(2, 10, 0, 3); // slice 0 from begin 0: nothing asked, still every chunk gathered
    EXPECT_TRUE(all[0].empty());
    EXPECT_EQ(run(2, 0, 0, 3)[1].size(), 0u); // nothing to gather: no exchange at all
}
