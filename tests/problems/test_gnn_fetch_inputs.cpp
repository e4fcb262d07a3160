// Problem 68's inputs are pinned by digest: the table is drawn by a fast path with an exact fallback on
// several threads (problem.cpp), which must give the values of the plain one-element-at-a-time draw
// (CounterRng::normal rounded by f64_to_element) bit for bit, in every dtype and mode.
#include "pkbw/core/random.h"
#include "pkbw/core/sha256.h"
#include "test_util.h"

#include <string>
#include <string_view>

namespace pkbw::test {
namespace {

std::string digest_of_inputs(const ProblemConfig& c, int rank) {
    std::string all;
    for (const Tensor& t : problem("68").build_inputs(c, rank)) {
        all += sha256_hex(std::string_view(reinterpret_cast<const char*>(t.data()), t.nbytes()));
    }
    return sha256_hex(all);
}

// The plain draw, element by element, of the table: what the fast path must reproduce.
void expect_table_is_the_plain_draw(const ProblemConfig& c, int rank) {
    const std::vector<Tensor> inputs = problem("68").build_inputs(c, rank);
    const CounterRng rng(pkb_seed(c.seed, 68, rank, c.trial), 0);
    const Tensor& table = inputs[0];
    std::int64_t differ = 0;
    for (std::int64_t i = 0; i < table.numel(); ++i) {
        differ += table.get_f64(i) != round_to(c.dtype, rng.normal(static_cast<std::uint64_t>(i)));
    }
    EXPECT_EQ(differ, 0) << "of " << table.numel();
}

TEST(GnnFetchInputs, TheTableIsThePlainDrawInEveryFloatingDtype) {
    for (DType dtype : {DType::BF16, DType::F16, DType::F32, DType::F64}) {
        expect_table_is_the_plain_draw(config(2, 16, 128, dtype), 1);
    }
}

// Digests of the inputs drawn before the draw was made parallel (M = 16: a table of 27,100 rows).
TEST(GnnFetchInputs, InputsKeepTheirPinnedDigests) {
    EXPECT_EQ(digest_of_inputs(config(2, 16, 128, DType::BF16), 1),
              "5193215b1bb5d85271f7c04f69003f7b92a0da0bffc1fcda297c8288742ee1f7");
    EXPECT_EQ(digest_of_inputs(config(3, 16, 256, DType::F32), 2),
              "61d1ef6a7f6e2662b39828a57b0d50102d5447ebc10387662ba328310c46fbc6");
    EXPECT_EQ(digest_of_inputs(config(2, 16, 128, DType::F16), 0),
              "58dbd10fa6489e1f02306098a2328613877269274f1717bd795d66fc33855356");
    EXPECT_EQ(digest_of_inputs(config(2, 16, 128, DType::BF16, InputMode::Exact), 0),
              "8211c7fd26e8bcff52cfd0f6e8d6bdd9dc7fb7a201e17dc3f491e605c720f782");
}

} // namespace
} // namespace pkbw::test
