// Host oracle for PKB problem 11: the same product as 12 (gather the A shards, multiply in double,
// round once; sharded_gemm_host.h); the transposes of PKB's reference do not change the values.
#include "pkbw/solution.h"
#include "pkbw/toolkit/sharded_gemm_host.h"

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    return pkbw::tk::allgather_gemm_oracle(ctx, "11_allgather_gemm_AT");
}
