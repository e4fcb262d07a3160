// PKB problem 14: column-sharded GEMM outputs gathered side by side.
#include "gemm_collective.h"

namespace pkbw::problems {

const Problem& problem_14() {
    static const GemmCollectiveProblem problem(
        {.id = 14,
         .stem = "14_gemm_allgather",
         .category = "FCC",
         .title = "GEMM on a column shard, then all-gather along columns",
         .description = "Rank r holds A_r [M, 512] and B_r [512, N/W]; every rank returns "
                        "[A_0 B_0 | A_1 B_1 | ... ], the per-rank products concatenated along "
                        "columns, shape [M, N]. W must divide N."},
        CollectiveKind::AllGather);
    return problem;
}

} // namespace pkbw::problems
