// PKB problem 11: gather a K-sharded A through its transpose, then multiply by the local B.
#include "allgather_gemm.h"

namespace pkbw::problems {

const Problem& problem_11() {
    static const AllGatherGemmProblem problem(
        {.id = 11,
         .stem = "11_allgather_gemm_AT",
         .category = "FCC",
         .title = "All-gather A transposed, then GEMM with the local B",
         .description = "Rank r holds A_local [M, 512/W] (its K-shard of A) and its own B [512, N]. "
                        "PKB gathers the transposed shards into A^T [512, M], computes "
                        "C^T = B^T A^T and returns its transpose: every rank returns A @ B_r, "
                        "shape [M, N] (a non-contiguous view in PKB, contiguous here; the "
                        "compared values are the same)."});
    return problem;
}

} // namespace pkbw::problems
