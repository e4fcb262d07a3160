// The timed calls' draws (engine/runtime/timing_inputs.h, docs/perf.md "Every timed call is a checked
// call"): every timed call reads slots of one layout, so a problem whose shapes change with the trial
// gets the draws whose shapes are the eval's first trial's on every rank, and a problem where too few
// are is refused by name. A problem whose sets are slow to draw gets fewer calls a block, so that the
// blocks do not wait minutes for their inputs.
#include "device.h"
#include "pkbw/core/error.h"
#include "pkbw/problems/registry.h"
#include "rendezvous.h"
#include "timing_inputs.h"

#include <chrono>
#include <cstring>
#include <gtest/gtest.h>
#include <thread>
#include <vector>

namespace pkbw::engine {
namespace {

constexpr std::uint64_t kSeed = 0x5eed;

const Problem& problem(const char* key) {
    const Problem* found = find_problem(key);
    if (found == nullptr) {
        throw std::runtime_error(std::string("no problem ") + key);
    }
    return *found;
}

ProblemConfig base_config(int world) {
    ProblemConfig config;
    config.world_size = world;
    config.m = 64;
    config.n = 128;
    config.dtype = DType::F32;
    return config;
}

// The judges' answer without the rendezvous: every rank's draws_of_base_shape, ANDed. Records the draws
// it was asked about, so that a test can see how far the search looked.
struct AllRanks {
    const Problem& problem;
    ProblemConfig base;
    int asked_up_to = 0;
    int looks = 0;

    std::vector<bool> operator()(int first, int count) {
        ++looks;
        asked_up_to = std::max(asked_up_to, first + count);
        std::vector<bool> all(static_cast<std::size_t>(count), true);
        for (int rank = 0; rank < base.world_size; ++rank) {
            const auto mine = draws_of_base_shape(problem, base, rank, kSeed, base.input_mode, first, count);
            for (std::size_t i = 0; i < all.size(); ++i) {
                all[i] = all[i] && mine[i];
            }
        }
        return all;
    }
};

void expect_shapes(const std::vector<TensorSpec>& got, const std::vector<TensorSpec>& want, int draw,
                   int rank) {
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t t = 0; t < got.size(); ++t) {
        EXPECT_EQ(got[t].shape, want[t].shape) << want[t].name << " of draw " << draw << " on rank " << rank;
    }
}

// The draws chosen for `key` at `world`: `sets` of them, in order, each of the base's shapes on every
// rank (the specs and the tensors the generator builds); returns them for the problem's own checks.
std::vector<int> checked_draws(const char* key, int world, int sets) {
    AllRanks agreed{problem(key), base_config(world)};
    const auto draws = one_shape_draws(problem(key).info().stem, sets, std::ref(agreed));
    EXPECT_EQ(static_cast<int>(draws.size()), sets);
    EXPECT_LE(agreed.asked_up_to, kTimingDrawsPerSet * sets);
    for (std::size_t i = 1; i < draws.size(); ++i) {
        EXPECT_LT(draws[i - 1], draws[i]);
    }
    for (int rank = 0; rank < world; ++rank) {
        const auto inputs = agreed.problem.input_specs(agreed.base, rank);
        const auto outputs = agreed.problem.output_specs(agreed.base, rank);
        for (const int draw : draws) {
            const auto config = timing_config(agreed.base, kSeed, agreed.base.input_mode, draw);
            expect_shapes(agreed.problem.input_specs(config, rank), inputs, draw, rank);
            expect_shapes(agreed.problem.output_specs(config, rank), outputs, draw, rank);
        }
        const auto config = timing_config(agreed.base, kSeed, agreed.base.input_mode, draws.back());
        const auto built = agreed.problem.build_inputs(config, rank);
        for (std::size_t t = 0; t < built.size(); ++t) {
            EXPECT_EQ(built[t].shape(), inputs[t].shape) << key << " rank " << rank;
        }
    }
    return draws;
}

TEST(TimingDraws, ShapesThatChangeWithTheTrialGetDrawsOfTheEvalsShapesOnEveryRank) {
    // 85: odd ranks hold nothing when trial % 4 == 3; the eval's first trial (0) has them full.
    for (const int world : {2, 4}) {
        const auto draws = checked_draws("85", world, 40);
        for (const int draw : draws) {
            EXPECT_NE((kTimingTrialBase + draw) % 4, 3) << "draw " << draw;
        }
        const int skipped = draws.back() + 1 - static_cast<int>(draws.size());
        EXPECT_GE(skipped, 9) << "one draw in four has empty odd ranks";
    }
    // 81: rank i holds 1 + (i + trial) % 3 objects, so only trials = 0 mod 3 have trial 0's counts; the
    // first timed trial (2^24 = 1 mod 3) has not.
    for (const int world : {2, 3}) {
        const auto draws = checked_draws("81", world, 30);
        EXPECT_NE(draws.front(), 0);
        for (const int draw : draws) {
            EXPECT_EQ((kTimingTrialBase + draw) % 3, 0) << "draw " << draw;
        }
    }
}

TEST(TimingDraws, ShapesThatNeverChangeTakeTheFirstDrawsInOneLook) {
    AllRanks agreed{problem("12"), base_config(2)};
    const auto draws = one_shape_draws(problem("12").info().stem, 25, std::ref(agreed));
    ASSERT_EQ(draws.size(), 25u);
    for (int i = 0; i < 25; ++i) {
        EXPECT_EQ(draws[static_cast<std::size_t>(i)], i);
    }
    EXPECT_EQ(agreed.looks, 1);
    EXPECT_EQ(agreed.asked_up_to, 25);
}

TEST(TimingDraws, TooFewDrawsOfOneShapeAreRefusedNamingTheProblemWithinTheBound) {
    // 70's values hold sum(lengths) entries, drawn per trial on every rank (1536 lengths in [5, 20] at
    // M = 64: a sum's deviation about 180, so each rank's equals the first trial's one draw in 600):
    // both ranks' at once, fewer than one draw in 10^5.
    AllRanks agreed{problem("70"), base_config(2)};
    try {
        one_shape_draws(problem("70").info().stem, 4, std::ref(agreed));
        FAIL() << "70's timed draws of one shape were found";
    } catch (const Error& error) {
        const std::string what = error.what();
        EXPECT_NE(what.find("problem 70_torchrec_kjt_all2all: its shapes differ between trials"),
                  std::string::npos)
            << what;
        EXPECT_NE(what.find("needs 4"), std::string::npos) << what;
    }
    EXPECT_EQ(agreed.asked_up_to, kTimingDrawsPerSet * 4);
}

TEST(TimingDraws, CallsAreLoweredWhereTheirSetsWouldTakeLongToDraw) {
    // Problem 60 at PKB's shape on the H200 (W = 1, graph on): 32 calls held by memory, 11 sets a call,
    // about 3 s a set on one thread, 16 threads: 352 sets were minutes of drawing; 9 calls draw in 20 s.
    EXPECT_EQ(calls_drawn_in_time(32, 11, 3.0, 16, kTimedDrawSeconds), 9);
    // Problem 59's sets (0.6 s) fit: its 39 calls stay.
    EXPECT_EQ(calls_drawn_in_time(39, 11, 0.6, 16, kTimedDrawSeconds), 39);
    // Never below the floor, never above what was asked; nothing measured changes nothing.
    EXPECT_EQ(calls_drawn_in_time(50, 11, 60.0, 1, kTimedDrawSeconds), kMinCallsForDrawTime);
    EXPECT_EQ(calls_drawn_in_time(5, 11, 60.0, 1, kTimedDrawSeconds), 5);
    EXPECT_EQ(calls_drawn_in_time(50, 11, 0.0, 16, kTimedDrawSeconds), 50);
}

// One judge: its own contribution is everything.
class OneJudge final : public Rendezvous {
public:
    OneJudge()
        : Rendezvous(0, 1) {}
    std::vector<std::vector<std::byte>> all_gather(std::span<const std::byte> mine) override {
        return {std::vector<std::byte>(mine.begin(), mine.end())};
    }
};

// A problem whose every set takes 20 ms to draw (its values change with the trial).
class SlowDraws final : public Problem {
public:
    const ProblemInfo& info() const override {
        static const ProblemInfo info{9001, "9001_slow_draws", "TI", "slow draws", "slow draws"};
        return info;
    }
    std::vector<TensorSpec> input_specs(const ProblemConfig&, int) const override {
        return {{"x", DType::F32, {4}}};
    }
    std::vector<TensorSpec> output_specs(const ProblemConfig&, int) const override {
        return {{"y", DType::F32, {4}}};
    }
    void make_inputs(const ProblemConfig& config, int, std::vector<Tensor>& inputs) const override {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        const float value = static_cast<float>(config.trial);
        for (std::size_t i = 0; i < 4; ++i) {
            std::memcpy(static_cast<std::byte*>(inputs[0].mutable_data()) + i * sizeof value, &value,
                        sizeof value);
        }
    }
};

TEST(TimingDraws, TheAgreementTimesTheDrawsAndLowersTheCallsOfSlowOnes) {
    OneJudge judge;
    const SlowDraws problem;
    TimingRequest request;
    request.calls = 50;
    request.pairs = 2; // 3 sets a call: 150 sets, 3 s on one thread
    request.threads = 1;
    request.draw_seconds = 0.5;
    const TimingAgreement agreed = agree_on_timing(judge, problem, base_config(1), 0, request);
    EXPECT_EQ(agreed.plan.calls_per_block, kMinCallsForDrawTime) << agreed.plan.reason;
    EXPECT_NE(agreed.plan.reason.find("so that its 24 sets draw in about"), std::string::npos)
        << agreed.plan.reason;
    EXPECT_EQ(agreed.draws.size(), 24u);
    EXPECT_EQ(agreed.plan.staging_bytes, 24u * 256u);
    // Quick draws keep every call asked for.
    request.draw_seconds = 1000;
    EXPECT_EQ(agree_on_timing(judge, problem, base_config(1), 0, request).plan.calls_per_block, 50);
}

// Two inputs of 12 and 20 bytes, each in a 256-byte slot of the set: the padding must read zero.
class PaddedDraws final : public Problem {
public:
    const ProblemInfo& info() const override {
        static const ProblemInfo info{9002, "9002_padded_draws", "TI", "padded draws", "padded draws"};
        return info;
    }
    std::vector<TensorSpec> input_specs(const ProblemConfig&, int) const override {
        return {{"x", DType::F32, {3}}, {"y", DType::F32, {5}}};
    }
    std::vector<TensorSpec> output_specs(const ProblemConfig&, int) const override {
        return {{"z", DType::F32, {5}}};
    }
    void make_inputs(const ProblemConfig& config, int, std::vector<Tensor>& inputs) const override {
        for (std::size_t t = 0; t < inputs.size(); ++t) {
            for (std::int64_t i = 0; i < inputs[t].numel(); ++i) {
                const float value =
                    static_cast<float>(config.trial * 100 + static_cast<int>(t) * 10 + i) + 0.5f;
                std::memcpy(inputs[t].mutable_data() + i * static_cast<std::int64_t>(sizeof value), &value,
                            sizeof value);
            }
        }
    }
};

// The sets are drawn into memory that is not cleared beforehand (each drawing thread clears its own set):
// what reaches the device is every set's tensors at their offsets and zeros between them.
TEST(TimingDraws, TheStagedSetsHoldTheDrawsAndZerosBetweenTheirTensors) {
    OneJudge judge;
    const PaddedDraws problem;
    TimingRequest request;
    request.calls = 6;
    request.pairs = 1;
    request.threads = 3;
    const ProblemConfig base = base_config(1);
    const TimingAgreement agreed = agree_on_timing(judge, problem, base, 0, request);
    // The heap's chunk of the staging's size left full of ones first (malloc hands it back for the
    // drawn sets), so that bytes the drawing does not clear would show.
    {
        std::vector<std::byte> dirty(512 * agreed.draws.size(), std::byte{0xff});
        asm volatile("" : : "r"(dirty.data()) : "memory");
    }
    const auto device = make_host_device(0, "pkbw-test-draws"); // outlives the inputs' staging
    TimingInputs inputs(problem, base, 0, agreed, request.threads);
    inputs.upload(*device);
    ASSERT_EQ(inputs.set_bytes(), 512u);
    const std::size_t bytes = inputs.set_bytes() * static_cast<std::size_t>(inputs.sets());
    void* staged = device->allocate(bytes);
    inputs.load(0, inputs.sets(), staged);
    device->synchronize();
    std::vector<std::byte> host(bytes);
    device->download(host.data(), staged, bytes);
    for (int set = 0; set < inputs.sets(); ++set) {
        const auto want = problem.build_inputs(inputs.config(set), 0);
        const std::byte* got = host.data() + inputs.set_bytes() * static_cast<std::size_t>(set);
        for (std::size_t t = 0; t < want.size(); ++t) {
            const std::size_t offset = inputs.offsets()[t];
            EXPECT_EQ(std::memcmp(got + offset, want[t].data(), want[t].nbytes()), 0) << "set " << set;
            const std::size_t end = t + 1 < want.size() ? inputs.offsets()[t + 1] : inputs.set_bytes();
            for (std::size_t b = offset + want[t].nbytes(); b < end; ++b) {
                ASSERT_EQ(got[b], std::byte{0}) << "set " << set << " byte " << b;
            }
        }
    }
    device->release(staged);
}

} // namespace
} // namespace pkbw::engine
