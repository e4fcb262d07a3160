// PKB problem 12: gather a K-sharded A, then multiply by this rank's own B.
#include "allgather_gemm.h"

namespace pkbw::problems {

const Problem& problem_12() {
    static const AllGatherGemmProblem problem(
        {.id = 12,
         .stem = "12_allgather_gemm",
         .category = "FCC",
         .title = "All-gather A along K, then GEMM with the local B",
         .description = "Rank r holds A_local [M, 512/W] (columns r*512/W.. of a global A) and "
                        "its own B [512, N]. Every rank gathers A [M, 512] by concatenating the "
                        "shards along K and returns A @ B_r, shape [M, N]. B differs per rank "
                        "(PKB draws it per rank), so the outputs differ."});
    return problem;
}

} // namespace pkbw::problems
