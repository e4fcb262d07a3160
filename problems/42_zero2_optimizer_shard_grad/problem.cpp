// PKB problem 42: the DDP step of 40 with ZeRO-2 (optimizer state and gradients sharded).
#include "mlp_inputs.h"

namespace pkbw::problems {

const Problem& problem_42() {
    static const ZeroShardProblem problem(
        {.id = 42,
         .stem = "42_zero2_optimizer_shard_grad",
         .category = "TI",
         .title = "ZeRO-2 training step",
         .description = "As 40 (rank 0's MLP parameters broadcast, forward/backward on the local rows, "
                        "MSE mean loss), but the flat gradient is reduce-scattered (sum) and divided "
                        "by W and Adam "
                        "updates only this rank's 1/W slice of the flat parameters with its moment "
                        "slices [P/W]; the updated slices are all-gathered. Returns (W1, b1, W2, b2, "
                        "exp_avg_part, exp_avg_sq_part). hidden is bumped until W divides P."},
        CollectiveKind::ReduceScatter);
    return problem;
}

} // namespace pkbw::problems
