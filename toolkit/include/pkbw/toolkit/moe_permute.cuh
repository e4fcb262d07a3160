// MoE dispatch and combine on the device for references (pkbw reference toolkit): PKB's (Megatron's)
// expert-major token permutation, the chunk regroup by local expert, and the weighted scatter-add
// unpermute. Index arithmetic (plans, orders) is moe_permute.h's; the host twins are in
// moe_permute_host.h.
//
//     std::vector<long long> counts;                        // rows per expert (host)
//     PKBW_TRY(tk::expert_major_permutation(ctx, map, DType::F32, E, T, sorted, nullptr, cap, counts));
//     PKBW_TRY(tk::gather_rows(ctx, hidden, row_bytes, sorted, rows, T, permuted));   // gather.cuh
//     PKBW_TRY(tk::all_to_all_v(...));                                                 // alltoall.cuh
//     PKBW_TRY(tk::sort_chunks(ctx, received, row_bytes, plan, regrouped));            // plan: moe_permute.h
//     ...
//     PKBW_TRY(tk::dense_routing_weights(ctx, D, weights, selected, T, k, E, dense));
//     PKBW_TRY(tk::permuted_row_weights(ctx, D, dense, sorted, row_experts, rows, E, row_w));
//     PKBW_TRY(tk::unpermute_scatter_add(ctx, D, back, row_w, sorted, rows, T, N, out));
//
// Determinism: no floating-point atomics. The combine adds each output row's contributions in
// ascending permuted-row order, rounding to D after every product and every add, as PyTorch's CPU
// scatter_add_ (and its CUDA atomics whenever a row has at most two contributions: 0 + a + b is the
// same in any order). See moe_permute_host.h for the rounding rule written out.
#pragma once

#include "pkbw/solution.h"
#include "pkbw/toolkit/check.cuh"
#include "pkbw/toolkit/moe_permute.h"
#include "pkbw/toolkit/types.cuh"

#include <cstdint>
#include <cstdio>
#include <vector>

namespace pkbw::tk {

namespace detail {

// `.bool()` of element i of a routing map: non-zero (NaN too), -0.0 is false.
__device__ __forceinline__ bool routed_at(const void* map, DType dtype, long long i) {
    switch (dtype) {
    case DType::Bool:
    case DType::U8:
    case DType::I8:
        return static_cast<const std::uint8_t*>(map)[i] != 0;
    case DType::I16:
        return static_cast<const std::int16_t*>(map)[i] != 0;
    case DType::I32:
        return static_cast<const std::int32_t*>(map)[i] != 0;
    case DType::I64:
        return static_cast<const std::int64_t*>(map)[i] != 0;
    case DType::BF16:
    case DType::F16:
        return (static_cast<const std::uint16_t*>(map)[i] & 0x7fffu) != 0;
    case DType::F32:
        return (static_cast<const std::uint32_t*>(map)[i] & 0x7fffffffu) != 0;
    case DType::F64:
        return (static_cast<const std::uint64_t*>(map)[i] & 0x7fffffffffffffffull) != 0;
    default:
        return false;
    }
}

inline bool routing_map_dtype_ok(DType dtype) {
    switch (dtype) {
    case DType::Bool:
    case DType::U8:
    case DType::I8:
    case DType::I16:
    case DType::I32:
    case DType::I64:
    case DType::BF16:
    case DType::F16:
    case DType::F32:
    case DType::F64:
        return true;
    default:
        return false;
    }
}

// counts[e] = routed tokens of expert e (one block per expert).
__global__ void moe_expert_counts_kernel(const void* map, DType dtype, long long tokens, long long* counts) {
    __shared__ unsigned long long total;
    if (threadIdx.x == 0)
        total = 0;
    __syncthreads();
    const long long row = blockIdx.x * tokens;
    unsigned long long mine = 0;
    for (long long t = threadIdx.x; t < tokens; t += blockDim.x)
        mine += routed_at(map, dtype, row + t) ? 1 : 0;
    atomicAdd(&total, mine);
    __syncthreads();
    if (threadIdx.x == 0)
        counts[blockIdx.x] = static_cast<long long>(total);
}

// One block per expert: its routed tokens, ascending, at rows [sum of counts before e, ...): a
// block-wide stream compaction by warp ballots, tile after tile. Rows at or past `capacity` are not
// written (the host reports the overflow).
template <int kThreads>
__global__ void moe_expert_indices_kernel(const void* map, DType dtype, long long tokens,
                                          const long long* counts, long long* sorted, int* row_experts,
                                          long long capacity) {
    constexpr int kWarps = kThreads / 32;
    __shared__ int warp_offset[kWarps];
    __shared__ int tile_total;
    const int e = blockIdx.x, lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    long long base = 0;
    for (int q = 0; q < e; ++q)
        base += counts[q];
    const long long row = static_cast<long long>(e) * tokens;
    for (long long start = 0; start < tokens; start += kThreads) {
        const long long t = start + threadIdx.x;
        const bool flag = t < tokens && routed_at(map, dtype, row + t);
        const unsigned ballot = __ballot_sync(0xffffffffu, flag);
        if (lane == 0)
            warp_offset[warp] = __popc(ballot);
        __syncthreads();
        if (threadIdx.x == 0) {
            int run = 0;
            for (int w = 0; w < kWarps; ++w) {
                const int n = warp_offset[w];
                warp_offset[w] = run;
                run += n;
            }
            tile_total = run;
        }
        __syncthreads();
        if (flag) {
            const long long pos = base + warp_offset[warp] + __popc(ballot & ((1u << lane) - 1u));
            if (pos < capacity) {
                sorted[pos] = t;
                if (row_experts)
                    row_experts[pos] = e;
            }
        }
        base += tile_total;
        __syncthreads();
    }
}

// out[i] = in[0] + ... + in[i-1] for i <= n (one block; out has n + 1 entries).
template <int kThreads>
__global__ void moe_exclusive_scan_kernel(const long long* in, long long n, long long* out) {
    constexpr int kWarps = kThreads / 32;
    __shared__ long long warp_sum[kWarps];
    __shared__ long long carry;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (threadIdx.x == 0)
        carry = 0;
    __syncthreads();
    for (long long start = 0; start < n; start += kThreads) {
        const long long i = start + threadIdx.x;
        const long long v = i < n ? in[i] : 0;
        long long x = v;
        for (int o = 1; o < 32; o <<= 1) {
            const long long y = __shfl_up_sync(0xffffffffu, x, o);
            if (lane >= o)
                x += y;
        }
        if (lane == 31)
            warp_sum[warp] = x;
        __syncthreads();
        if (warp == 0) {
            long long s = lane < kWarps ? warp_sum[lane] : 0;
            for (int o = 1; o < 32; o <<= 1) {
                const long long y = __shfl_up_sync(0xffffffffu, s, o);
                if (lane >= o)
                    s += y;
            }
            if (lane < kWarps)
                warp_sum[lane] = s;
        }
        __syncthreads();
        const long long before = carry + (warp == 0 ? 0 : warp_sum[warp - 1]);
        if (i < n)
            out[i] = before + x - v;
        __syncthreads();
        if (threadIdx.x == kThreads - 1)
            carry = before + x;
        __syncthreads();
    }
    if (threadIdx.x == 0)
        out[n] = carry;
}

// Rows per target token (targets outside [0, tokens) raise the flag and are left out).
__global__ void moe_target_counts_kernel(const long long* targets, long long rows, long long tokens,
                                         unsigned long long* counts, int* bad) {
    for (long long i = PKBW_GRID_STRIDE_BEGIN; i < rows; i += PKBW_GRID_STRIDE_STEP) {
        const long long t = targets[i];
        if (t < 0 || t >= tokens) {
            *bad = 1;
            continue;
        }
        atomicAdd(&counts[t], 1ull);
    }
}

// Row i into its target's segment (order within a segment arbitrary; sorted next).
__global__ void moe_place_rows_kernel(const long long* targets, long long rows, long long tokens,
                                      unsigned long long* cursor, long long* slots) {
    for (long long i = PKBW_GRID_STRIDE_BEGIN; i < rows; i += PKBW_GRID_STRIDE_STEP) {
        const long long t = targets[i];
        if (t < 0 || t >= tokens)
            continue;
        slots[atomicAdd(&cursor[t], 1ull)] = i;
    }
}

// Each token's segment ascending by row (segments hold a token's k contributions: insertion sort).
__global__ void moe_sort_segments_kernel(const long long* offsets, long long tokens, long long* slots) {
    for (long long t = PKBW_GRID_STRIDE_BEGIN; t < tokens; t += PKBW_GRID_STRIDE_STEP) {
        const long long lo = offsets[t], hi = offsets[t + 1];
        for (long long a = lo + 1; a < hi; ++a) {
            const long long v = slots[a];
            long long b = a;
            for (; b > lo && slots[b - 1] > v; --b)
                slots[b] = slots[b - 1];
            slots[b] = v;
        }
    }
}

template <class T>
__global__ void moe_combine_kernel(const T* rows, const T* weights, const long long* offsets,
                                   const long long* slots, long long tokens, long long n, T* out) {
    const long long total = tokens * n;
    for (long long idx = PKBW_GRID_STRIDE_BEGIN; idx < total; idx += PKBW_GRID_STRIDE_STEP) {
        const long long t = idx / n, c = idx % n;
        float acc = 0.f;
        for (long long j = offsets[t]; j < offsets[t + 1]; ++j) {
            const long long i = slots[j];
            // Two operations, each rounded (torch stores `tokens * weight`, then scatter_add_ adds it):
            // the intrinsics keep nvcc from contracting them into one FMA, which in f32 (where
            // round_as is the identity) would round once instead of twice.
            float v = to_float(rows[i * n + c]);
            if (weights)
                v = round_as<T>(__fmul_rn(v, to_float(weights[i])));
            acc = round_as<T>(__fadd_rn(acc, v));
        }
        out[idx] = from_float<T>(acc);
    }
}

// One thread per token: its row of [tokens, experts] zeroed, then weights added at the selected
// experts in k order, rounded to T after each add.
template <class T>
__global__ void moe_dense_weights_kernel(const T* weights, const long long* selected, long long tokens,
                                         long long topk, long long experts, T* dense, int* bad) {
    for (long long t = PKBW_GRID_STRIDE_BEGIN; t < tokens; t += PKBW_GRID_STRIDE_STEP) {
        T* row = dense + t * experts;
        for (long long e = 0; e < experts; ++e)
            row[e] = from_float<T>(0.f);
        for (long long j = 0; j < topk; ++j) {
            const long long e = selected[t * topk + j];
            if (e < 0 || e >= experts) {
                *bad = 1;
                continue;
            }
            row[e] = from_float<T>(to_float(row[e]) + to_float(weights[t * topk + j]));
        }
    }
}

template <class T>
__global__ void moe_row_weights_kernel(const T* dense, const long long* sorted, const int* row_experts,
                                       long long rows, long long experts, T* out) {
    for (long long i = PKBW_GRID_STRIDE_BEGIN; i < rows; i += PKBW_GRID_STRIDE_STEP)
        out[i] = dense[sorted[i] * experts + row_experts[i]];
}

inline int* moe_flag(const Context& ctx) {
    return static_cast<int*>(ctx.scratch("pkbw_tk_moe_flag", sizeof(int)));
}

// Waits for the stream and returns 0, or ctx.fail(message) when the kernels raised the flag.
inline int moe_check_flag(const Context& ctx, const int* flag, const char* message) {
    int raised = 0;
    PKBW_CHECK(ctx, cudaMemcpyAsync(&raised, flag, sizeof(int), cudaMemcpyDeviceToHost, ctx.stream()));
    PKBW_CHECK(ctx, cudaStreamSynchronize(ctx.stream()));
    return raised ? ctx.fail(message) : 0;
}

} // namespace detail

// The expert-major permutation of routing_map [experts, tokens] (device; any integer, bool or
// floating dtype; non-zero = routed): sorted_indices[i] is the token of permuted row i
// (`token_indices.masked_select(routing_map)`), row_experts[i] (nullable, int32) its expert, and
// `counts` (host) the rows per expert. Fails when the routed pairs exceed `capacity` rows (nothing
// past it is written). Synchronises the stream once (the counts come back to the host).
inline int expert_major_permutation(const Context& ctx, const void* routing_map, DType map_dtype,
                                    long long experts, long long tokens, long long* sorted_indices,
                                    int* row_experts, long long capacity, std::vector<long long>& counts) {
    counts.assign(static_cast<std::size_t>(experts > 0 ? experts : 0), 0);
    if (!detail::routing_map_dtype_ok(map_dtype))
        return ctx.fail(
            "pkbw::tk::expert_major_permutation: the routing map's dtype is not an integer, bool or "
            "floating type");
    if (experts <= 0 || tokens <= 0)
        return 0;
    auto* device_counts = static_cast<long long*>(
        ctx.scratch("pkbw_tk_moe_expert_counts", static_cast<std::size_t>(experts) * sizeof(long long)));
    const unsigned blocks = static_cast<unsigned>(experts);
    detail::moe_expert_counts_kernel<<<blocks, 256, 0, ctx.stream()>>>(routing_map, map_dtype, tokens,
                                                                       device_counts);
    PKBW_CHECK(ctx, cudaGetLastError());
    detail::moe_expert_indices_kernel<256><<<blocks, 256, 0, ctx.stream()>>>(
        routing_map, map_dtype, tokens, device_counts, sorted_indices, row_experts, capacity);
    PKBW_CHECK(ctx, cudaGetLastError());
    PKBW_CHECK(ctx, cudaMemcpyAsync(counts.data(), device_counts, counts.size() * sizeof(long long),
                                    cudaMemcpyDeviceToHost, ctx.stream()));
    PKBW_CHECK(ctx, cudaStreamSynchronize(ctx.stream()));
    long long rows = 0;
    for (long long c : counts)
        rows += c;
    if (rows > capacity) {
        char message[200];
        std::snprintf(
            message, sizeof message,
            "pkbw::tk::expert_major_permutation: the routing map routes %lld (expert, token) pairs but "
            "the output holds %lld rows",
            rows, capacity);
        return ctx.fail(message);
    }
    return 0;
}

// PKB's `_sort_chunks_by_idxs` on device rows of row_bytes: dst row blocks as `plan`
// (sort_chunks_plan in moe_permute.h). One cudaMemcpyAsync per non-empty chunk; src and dst must not
// overlap. Any dtype (bytes move unchanged).
inline int sort_chunks(const Context& ctx, const void* src, std::size_t row_bytes,
                       const std::vector<ChunkCopy>& plan, void* dst) {
    for (const ChunkCopy& c : plan)
        PKBW_CHECK(ctx, cudaMemcpyAsync(static_cast<char*>(dst) + c.dst_row * row_bytes,
                                        static_cast<const char*>(src) + c.src_row * row_bytes,
                                        static_cast<std::size_t>(c.rows) * row_bytes,
                                        cudaMemcpyDeviceToDevice, ctx.stream()));
    return 0;
}

// PKB's `_generate_weights_idx`: dense [tokens, experts] in `dtype` = zeros with routing weights
// [tokens, topk] scatter-added at selected [tokens, topk] (int64), each add rounded to dtype.
// An expert outside [0, experts) fails (synchronises the stream once to know).
inline int dense_routing_weights(const Context& ctx, DType dtype, const void* weights,
                                 const long long* selected, long long tokens, long long topk,
                                 long long experts, void* dense) {
    if (tokens <= 0 || experts <= 0)
        return 0;
    int* bad = detail::moe_flag(ctx);
    PKBW_CHECK(ctx, cudaMemsetAsync(bad, 0, sizeof(int), ctx.stream()));
    PKBW_TRY(dispatch_float(ctx, dtype, "pkbw::tk::dense_routing_weights", [&](auto tag) {
        using T = typename decltype(tag)::type;
        detail::moe_dense_weights_kernel<T><<<grid_for(tokens), 256, 0, ctx.stream()>>>(
            static_cast<const T*>(weights), selected, tokens, topk, experts, static_cast<T*>(dense), bad);
        PKBW_CHECK(ctx, cudaGetLastError());
        return 0;
    }));
    return detail::moe_check_flag(ctx, bad,
                                  "pkbw::tk::dense_routing_weights: a selected expert is outside [0, E)");
}

// `dense.T.masked_select(routing_map)`: out[i] = dense[sorted[i], row_experts[i]] for the rows of an
// expert_major_permutation (dense [tokens, experts] in dtype, out [rows] in dtype).
inline int permuted_row_weights(const Context& ctx, DType dtype, const void* dense, const long long* sorted,
                                const int* row_experts, long long rows, long long experts, void* out) {
    if (rows <= 0)
        return 0;
    return dispatch_float(ctx, dtype, "pkbw::tk::permuted_row_weights", [&](auto tag) {
        using T = typename decltype(tag)::type;
        detail::moe_row_weights_kernel<T><<<grid_for(rows), 256, 0, ctx.stream()>>>(
            static_cast<const T*>(dense), sorted, row_experts, rows, experts, static_cast<T*>(out));
        PKBW_CHECK(ctx, cudaGetLastError());
        return 0;
    });
}

// PKB's `_unpermute`: out [tokens, n] = zeros in dtype; row i of rows [count, n] times row_weights[i]
// (nullable: no product) is added into out row targets[i] (int64), products and adds rounded to
// dtype, rows ascending per output row (a stable counting sort by target, no float atomics).
// A target outside [0, tokens) fails. Uses ctx.scratch("pkbw_tk_moe_unpermute"); synchronises once.
inline int unpermute_scatter_add(const Context& ctx, DType dtype, const void* rows, const void* row_weights,
                                 const long long* targets, long long count, long long tokens, long long n,
                                 void* out) {
    if (tokens <= 0 || n <= 0)
        return 0;
    // Scratch: per-token counts then cursors [tokens], offsets [tokens + 1], slots [count].
    const std::size_t words = static_cast<std::size_t>(2 * tokens + 1 + (count > 0 ? count : 0));
    auto* scratch = static_cast<long long*>(ctx.scratch("pkbw_tk_moe_unpermute", words * sizeof(long long)));
    auto* cursor = reinterpret_cast<unsigned long long*>(scratch);
    long long* offsets = scratch + tokens;
    long long* slots = offsets + tokens + 1;
    int* bad = detail::moe_flag(ctx);
    PKBW_CHECK(ctx, cudaMemsetAsync(bad, 0, sizeof(int), ctx.stream()));
    PKBW_CHECK(
        ctx, cudaMemsetAsync(cursor, 0, static_cast<std::size_t>(tokens) * sizeof(long long), ctx.stream()));
    if (count > 0) {
        detail::moe_target_counts_kernel<<<grid_for(count), 256, 0, ctx.stream()>>>(targets, count, tokens,
                                                                                    cursor, bad);
        PKBW_CHECK(ctx, cudaGetLastError());
    }
    detail::moe_exclusive_scan_kernel<1024>
        <<<1, 1024, 0, ctx.stream()>>>(reinterpret_cast<const long long*>(cursor), tokens, offsets);
    PKBW_CHECK(ctx, cudaGetLastError());
    if (count > 0) {
        PKBW_CHECK(ctx, cudaMemcpyAsync(cursor, offsets, static_cast<std::size_t>(tokens) * sizeof(long long),
                                        cudaMemcpyDeviceToDevice, ctx.stream()));
        detail::moe_place_rows_kernel<<<grid_for(count), 256, 0, ctx.stream()>>>(targets, count, tokens,
                                                                                 cursor, slots);
        PKBW_CHECK(ctx, cudaGetLastError());
        detail::moe_sort_segments_kernel<<<grid_for(tokens), 256, 0, ctx.stream()>>>(offsets, tokens, slots);
        PKBW_CHECK(ctx, cudaGetLastError());
    }
    PKBW_TRY(dispatch_float(ctx, dtype, "pkbw::tk::unpermute_scatter_add", [&](auto tag) {
        using T = typename decltype(tag)::type;
        detail::moe_combine_kernel<T><<<grid_for(tokens * n), 256, 0, ctx.stream()>>>(
            static_cast<const T*>(rows), static_cast<const T*>(row_weights), offsets, slots, tokens, n,
            static_cast<T*>(out));
        PKBW_CHECK(ctx, cudaGetLastError());
        return 0;
    }));
    return detail::moe_check_flag(
        ctx, bad, "pkbw::tk::unpermute_scatter_add: a permuted row maps to a token outside the output");
}

} // namespace pkbw::tk
