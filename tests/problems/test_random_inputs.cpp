// fill_normal (the standard-normal inputs of most problems, fill_random_inputs) takes the fast route of
// normal_fill.h for whole tensors: its values must stay the plain draw's, CounterRng::normal rounded by
// f64_to_element, bit for bit in every dtype, so no problem's inputs change (problem 21's here: three
// standard-normal gradients, PKB's mode).
#include "pkbw/core/random.h"
#include "test_util.h"

namespace pkbw::test {
namespace {

TEST(RandomInputs, StandardNormalInputsAreThePlainDrawInEveryFloatingDtype) {
    for (DType dtype : {DType::BF16, DType::F16, DType::F32, DType::F64}) {
        const ProblemConfig c = config(2, 96, 160, dtype);
        for (int rank = 0; rank < 2; ++rank) {
            const std::vector<Tensor> inputs = problem("21").build_inputs(c, rank);
            ASSERT_EQ(inputs.size(), 3u);
            for (std::size_t k = 0; k < inputs.size(); ++k) {
                const CounterRng rng(pkb_seed(c.seed, 21, rank, c.trial), k);
                std::int64_t differ = 0;
                for (std::int64_t i = 0; i < inputs[k].numel(); ++i) {
                    differ +=
                        inputs[k].get_f64(i) != round_to(dtype, rng.normal(static_cast<std::uint64_t>(i)));
                }
                EXPECT_EQ(differ, 0) << dtype_name(dtype) << " rank " << rank << " input " << k;
            }
        }
    }
}

} // namespace
} // namespace pkbw::test
