// PKB problem 16: K-sharded GEMM partial products, reduce-scattered by rows.
#include "gemm_collective.h"

namespace pkbw::problems {

const Problem& problem_16() {
    static const GemmCollectiveProblem problem(
        {.id = 16,
         .stem = "16_gemm_reducescatter",
         .category = "FCC",
         .title = "K-sharded GEMM, then reduce-scatter by rows",
         .description = "Rank r holds A_r [M, 512/W] and B_r [512/W, N]; the partial products "
                        "A_r @ B_r (each rounded to the dtype) are summed across ranks and rank r "
                        "returns row block r of the sum, shape [M/W, N]. W must divide 512 and "
                        "M."},
        CollectiveKind::ReduceScatter);
    return problem;
}

} // namespace pkbw::problems
