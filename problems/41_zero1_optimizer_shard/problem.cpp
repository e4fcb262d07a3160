// PKB problem 41: the DDP step of 40 with ZeRO-1 (optimizer state sharded, gradients all-reduced).
#include "mlp_inputs.h"

namespace pkbw::problems {

const Problem& problem_41() {
    static const ZeroShardProblem problem(
        {.id = 41,
         .stem = "41_zero1_optimizer_shard",
         .category = "TI",
         .title = "ZeRO-1 training step",
         .description = "As 40 (rank 0's MLP parameters broadcast, forward/backward on the local rows, "
                        "MSE mean loss), but the flat gradient is all-reduced and divided by W and Adam "
                        "updates only this rank's 1/W slice of the flat parameters with its moment "
                        "slices [P/W]; the updated slices are all-gathered. Returns (W1, b1, W2, b2, "
                        "exp_avg_part, exp_avg_sq_part). hidden is bumped until W divides P."},
        CollectiveKind::AllReduce);
    return problem;
}

} // namespace pkbw::problems
