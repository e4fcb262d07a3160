// Reference for PKB problem 67: the toolkit's owner partition (CUB stable radix sort of idx % W, and the
// per-owner histogram), row gathers of the ids and rows into send order, the counts exchange
// (tk::exchange_counts), then two tk::all_to_all_v; K, the rows that arrive, is each output's length.
#include "pkbw/solution.h"
#include "pkbw/toolkit/alltoall.cuh"
#include "pkbw/toolkit/check.cuh"
#include "pkbw/toolkit/exchange_v.h"
#include "pkbw/toolkit/gather.cuh"
#include "pkbw/toolkit/sort.cuh"

#include <vector>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& idx = ctx.input(0);
    const pkbw::TensorView& value = ctx.input(1);
    const long long n = idx.shape[0];
    const std::size_t row_bytes = static_cast<std::size_t>(value.shape[1]) * pkbw::element_size(value.dtype);
    if (ctx.world_size == 1) { // PKB returns its inputs
        PKBW_CHECK(ctx, cudaMemcpyAsync(ctx.output(0).data, idx.data, idx.nbytes(), cudaMemcpyDeviceToDevice,
                                        ctx.stream()));
        PKBW_CHECK(ctx, cudaMemcpyAsync(ctx.output(1).data, value.data, value.nbytes(),
                                        cudaMemcpyDeviceToDevice, ctx.stream()));
        return pkbw::tk::set_output_lengths(ctx, n);
    }
    auto* perm = static_cast<long long*>(ctx.scratch("gnn67_perm", sizeof(long long) * (n > 0 ? n : 1)));
    const int world = ctx.world_size;
    auto* counts = static_cast<long long*>(ctx.scratch("gnn67_counts", sizeof(long long) * world));
    PKBW_TRY(pkbw::tk::partition_by_owner(ctx, idx.as<const long long>(), n, world, perm, counts));
    void* send_ids = ctx.scratch("gnn67_send_ids", sizeof(long long) * (n > 0 ? n : 1));
    void* send_rows = ctx.scratch("gnn67_send_rows", row_bytes * (n > 0 ? n : 1));
    PKBW_TRY(pkbw::tk::gather_rows(ctx, idx.data, sizeof(long long), perm, n, n, send_ids));
    PKBW_TRY(pkbw::tk::gather_rows(ctx, value.data, row_bytes, perm, n, n, send_rows));
    std::vector<long long> send_counts(static_cast<std::size_t>(world));
    PKBW_CHECK(ctx, cudaMemcpyAsync(send_counts.data(), counts, sizeof(long long) * world,
                                    cudaMemcpyDeviceToHost, ctx.stream()));
    PKBW_CHECK(ctx, cudaStreamSynchronize(ctx.stream()));
    const std::vector<long long> recv_counts = pkbw::tk::exchange_counts(ctx, send_counts);
    const long long k = pkbw::tk::total_of(recv_counts);
    if (k > ctx.output(0).shape[0]) {
        return ctx.fail("67 reference: more rows arrive than the outputs' bound");
    }
    PKBW_TRY(pkbw::tk::all_to_all_v(ctx, ctx.nccl(), send_ids, send_counts.data(), ctx.output(0).data,
                                    recv_counts.data(), sizeof(long long)));
    PKBW_TRY(pkbw::tk::all_to_all_v(ctx, ctx.nccl(), send_rows, send_counts.data(), ctx.output(1).data,
                                    recv_counts.data(), row_bytes));
    return pkbw::tk::set_output_lengths(ctx, k);
}
