// Reference for PKB problem 69: every rank's row count through tk::gather_counts (PKB's all-reduce of
// sizes), the scores through tk::all_to_all_v with every peer reading the same send buffer (PKB's
// all_to_all_single used as an all-gatherv, without the repeated copy), then one kernel that counts, per
// row, the negatives whose rounded sigmoid is above the positive's (toolkit positive_rank.h: a count gives
// the stable sort's position without sorting).
#include "pkbw/solution.h"
#include "pkbw/toolkit/alltoall.cuh"
#include "pkbw/toolkit/check.cuh"
#include "pkbw/toolkit/exchange_v.h"
#include "pkbw/toolkit/positive_rank.h"
#include "pkbw/toolkit/types.cuh"

#include <vector>

namespace {

namespace tk = pkbw::tk;

template <class T>
__device__ float sigmoid_rounded(T x) {
    return tk::round_as<T>(static_cast<float>(tk::sigmoid_f64(static_cast<double>(tk::to_float(x)))));
}

// One block per row: the positive's rounded sigmoid, then a block-wide count of the negatives above it.
template <class T>
__global__ void rank_rows(const T* pos, const T* neg, long long negatives, long long* out) {
    __shared__ unsigned long long greater;
    const long long row = blockIdx.x;
    if (threadIdx.x == 0) {
        greater = 0;
    }
    __syncthreads();
    const float positive = sigmoid_rounded(pos[row]);
    unsigned long long mine = 0;
    for (long long j = threadIdx.x; j < negatives; j += blockDim.x) {
        mine += sigmoid_rounded(neg[row * negatives + j]) > positive ? 1 : 0;
    }
    atomicAdd(&greater, mine);
    __syncthreads();
    if (threadIdx.x == 0) {
        out[row] = 1 + static_cast<long long>(greater);
    }
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& pos = ctx.input(0);
    const pkbw::TensorView& neg = ctx.input(1);
    const long long negatives = neg.shape[1];
    const std::size_t elem = pkbw::element_size(pos.dtype);
    const std::vector<long long> counts = tk::gather_counts(ctx, pos.shape[0]);
    const long long rows = tk::total_of(counts);
    if (rows != ctx.output(0).shape[0]) {
        return ctx.fail("69 reference: the gathered rows differ from the output's length");
    }
    // Every peer gets this rank's whole buffer (offset 0), and chunk p of the receive buffer is peer p's.
    const std::vector<long long> send_counts(counts.size(), pos.shape[0]);
    const std::vector<long long> send_offsets(counts.size(), 0);
    void* all_pos = ctx.scratch("gnn69_pos", elem * rows);
    void* all_neg = ctx.scratch("gnn69_neg", elem * rows * negatives);
    PKBW_TRY(tk::all_to_all_v(ctx, ctx.nccl(), pos.data, send_counts.data(), all_pos, counts.data(), elem,
                              send_offsets.data()));
    PKBW_TRY(tk::all_to_all_v(ctx, ctx.nccl(), neg.data, send_counts.data(), all_neg, counts.data(),
                              elem * negatives, send_offsets.data()));
    return tk::dispatch_float(ctx, pos.dtype, "69 reference", [&](auto tag) {
        using T = typename decltype(tag)::type;
        if (rows > 0) {
            rank_rows<T><<<static_cast<unsigned>(rows), 256, 0, ctx.stream()>>>(
                static_cast<const T*>(all_pos), static_cast<const T*>(all_neg), negatives,
                ctx.output(0).as<long long>());
        }
        return tk::finish(ctx);
    });
}
