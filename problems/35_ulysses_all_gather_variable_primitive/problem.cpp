// PKB problem 35: Ulysses' variable-size all-gather primitive: shapes first, then the data, concatenated
// along gather_dim 0.
#include "ulysses_all_gather.h"

namespace pkbw::problems {

const Problem& problem_35() {
    static const UlyssesAllGatherProblem problem(
        {.id = 35,
         .stem = "35_ulysses_all_gather_variable_primitive",
         .category = "SCP",
         .title = "Ulysses variable-size all-gather along dimension 0",
         .description = "Every rank holds x [M, N] (standard normal); every rank returns "
                        "[W*M, N] whose rows r*M .. r*M+M-1 are rank r's x "
                        "(all_gather of the int64 shapes, then of the tensors, cat on gather_dim 0; "
                        "at W = 1 x itself)."},
        {{"gather_dim", 0}});
    return problem;
}

} // namespace pkbw::problems
