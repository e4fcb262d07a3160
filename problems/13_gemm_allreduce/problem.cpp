// PKB problem 13: local GEMM, then the partial products are summed across ranks.
#include "gemm_collective.h"

namespace pkbw::problems {

const Problem& problem_13() {
    static const GemmCollectiveProblem problem(
        {.id = 13,
         .stem = "13_gemm_allreduce",
         .category = "FCC",
         .title = "GEMM, then all-reduce of the products",
         .description = "Rank r holds A_r [M, 512] and B_r [512, N]; every rank returns the sum "
                        "over ranks of A_r @ B_r, shape [M, N]. Each product is rounded to the "
                        "dtype before the sum, as PKB's reference materialises it."},
        CollectiveKind::AllReduce);
    return problem;
}

} // namespace pkbw::problems
