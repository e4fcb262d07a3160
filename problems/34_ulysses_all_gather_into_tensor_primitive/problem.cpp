// PKB problem 34: Ulysses' all_gather_into_tensor primitive, the shards stacked along dimension 0.
#include "ulysses_all_gather.h"

namespace pkbw::problems {

const Problem& problem_34() {
    static const UlyssesAllGatherProblem problem(
        {.id = 34,
         .stem = "34_ulysses_all_gather_into_tensor_primitive",
         .category = "SCP",
         .title = "Ulysses all-gather into one tensor along dimension 0",
         .description = "Every rank holds x [M, N] (standard normal); every rank returns "
                        "[W*M, N] whose rows r*M .. r*M+M-1 are rank r's x "
                        "(all_gather_into_tensor; at W = 1 x itself)."},
        {});
    return problem;
}

} // namespace pkbw::problems
