// Host oracle for PKB problem 12: gather the A shards, multiply in double, round once
// (sharded_gemm_host.h).
#include "pkbw/solution.h"
#include "pkbw/toolkit/sharded_gemm_host.h"

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    return pkbw::tk::allgather_gemm_oracle(ctx, "12_allgather_gemm");
}
