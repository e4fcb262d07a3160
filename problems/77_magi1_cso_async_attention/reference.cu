// Reference for PKB problem 77: key/value heads packed per destination (PKB's repeat_interleave when
// W > Hkv) and exchanged with tk::all_to_all; the received [W, ranges, S] rows regrouped by range
// (tk::permute), so range i's keys are the first K rows of its block; the queries regrouped by
// destination (tk::permute); then per range: tk::all_to_all of its queries, tk::gqa_attention (flash-style,
// fp32 inside) over the range's keys, tk::all_to_all of the outputs back; one tk::permute to
// [tokens, Hq, 128]. PKB overlaps each range's exchanges with the previous range's attention; the values
// do not depend on the overlap.
#include "pkbw/solution.h"
#include "pkbw/toolkit/alltoall.cuh"
#include "pkbw/toolkit/gqa_attention.cuh"
#include "pkbw/toolkit/permute.cuh"

#include <cmath>

namespace {

namespace tk = pkbw::tk;

// send [W, tokens, local_kv, width] from kv [tokens, kv_heads, width]: destination w's head j is the
// spread head w * local_kv + j, i.e. the original head (w * local_kv + j) / repeat.
template <class T>
__global__ void pack_kv(const T* kv, T* send, long long tokens, long long kv_heads, long long local_kv,
                        long long repeat, long long width, int world) {
    const long long total = static_cast<long long>(world) * tokens * local_kv * width;
    for (long long i = PKBW_GRID_STRIDE_BEGIN; i < total; i += PKBW_GRID_STRIDE_STEP) {
        const long long e = i % width, j = (i / width) % local_kv, t = (i / (width * local_kv)) % tokens,
                        w = i / (width * local_kv * tokens);
        send[i] = kv[(t * kv_heads + (w * local_kv + j) / repeat) * width + e];
    }
}

struct Dims {
    long long ranges, keys, tokens, slice, q_heads, local_q, kv_heads, local_kv, repeat, dim, width;
};

template <class T>
int attend(const pkbw::Context& ctx, const Dims& d) {
    const int world = ctx.world_size;
    const std::size_t es = sizeof(T);
    const long long kv_elems = world * d.tokens * d.local_kv * d.width,
                    q_elems = d.tokens * d.q_heads * d.dim;
    T* kv_send = static_cast<T*>(ctx.scratch("magi77_kv_send", kv_elems * es));
    T* kv_recv = static_cast<T*>(ctx.scratch("magi77_kv_recv", kv_elems * es));
    T* kv_range = static_cast<T*>(ctx.scratch("magi77_kv_range", kv_elems * es));
    T* q_send = static_cast<T*>(ctx.scratch("magi77_q_send", q_elems * es));
    T* q_recv = static_cast<T*>(ctx.scratch("magi77_q_recv", q_elems * es));
    T* o_local = static_cast<T*>(ctx.scratch("magi77_o_local", q_elems * es));
    T* o_recv = static_cast<T*>(ctx.scratch("magi77_o_recv", q_elems * es));

    pack_kv<T><<<tk::grid_for(kv_elems), 256, 0, ctx.stream()>>>(
        ctx.input(1).as<T>(), kv_send, d.tokens, d.kv_heads, d.local_kv, d.repeat, d.width, world);
    PKBW_TRY(tk::all_to_all(ctx, ctx.nccl(), kv_send, kv_recv, kv_elems / world * es));
    const long long kv_shape[3] = {world, d.ranges, d.slice * d.local_kv * d.width};
    const int swap01[3] = {1, 0, 2};
    PKBW_TRY(
        tk::permute(ctx, kv_recv, kv_range, es, 3, kv_shape, swap01)); // [ranges, W * S, local_kv, width]
    const long long q_shape[4] = {d.ranges, d.slice, world, d.local_q * d.dim};
    const int swap12[4] = {0, 2, 1, 3};
    PKBW_TRY(
        tk::permute(ctx, ctx.input(0).data, q_send, es, 4, q_shape, swap12)); // [ranges, W, S, local_q, dim]

    const long long per_range = world * d.slice * d.local_q * d.dim; // elements of one range's queries
    const std::size_t chunk = static_cast<std::size_t>(d.slice * d.local_q * d.dim) * es;
    tk::GqaShape s;
    s.queries = world * d.slice;
    s.keys = d.keys;
    s.q_heads = d.local_q;
    s.kv_heads = d.local_kv;
    s.head_dim = d.dim;
    s.scale = 1.0 / std::sqrt(static_cast<double>(d.dim));
    s.q = s.out = {d.local_q * d.dim, d.dim};
    s.k = s.v = {d.local_kv * d.width, d.width};
    for (long long i = 0; i < d.ranges; ++i) {
        PKBW_TRY(tk::all_to_all(ctx, ctx.nccl(), q_send + i * per_range, q_recv + i * per_range, chunk));
        const T* keys = kv_range + i * world * d.slice * d.local_kv * d.width;
        PKBW_TRY(tk::gqa_attention<T>(ctx, s, q_recv + i * per_range, keys, keys + d.dim,
                                      o_local + i * per_range));
        PKBW_TRY(tk::all_to_all(ctx, ctx.nccl(), o_local + i * per_range, o_recv + i * per_range, chunk));
    }
    const long long o_shape[4] = {d.ranges, world, d.slice, d.local_q * d.dim};
    return tk::permute(ctx, o_recv, ctx.output(0).data, es, 4, o_shape, swap12);
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& query = ctx.input(0);
    const pkbw::TensorView& key_value = ctx.input(1);
    const int world = ctx.world_size;
    Dims d{};
    d.ranges = static_cast<long long>(ctx.param("cp_shuffle_num", 4));
    d.keys = static_cast<long long>(ctx.param("clip_token_nums", 0));
    d.tokens = query.shape[0];
    d.q_heads = query.shape[1];
    d.dim = query.shape[2];
    d.kv_heads = key_value.shape[1];
    d.width = key_value.shape[2];
    d.slice = d.tokens / d.ranges;
    const long long spread = d.kv_heads < world && world % d.kv_heads == 0 ? world : d.kv_heads;
    d.repeat = spread / d.kv_heads;
    d.local_kv = spread / world;
    d.local_q = d.q_heads / world;
    if (d.tokens % d.ranges != 0 || spread % world != 0 || d.q_heads % world != 0 || d.width != 2 * d.dim ||
        d.keys < 1 || d.keys > world * d.slice)
        return ctx.fail("77 reference: inconsistent shapes or params");
    return tk::dispatch_float(ctx, query.dtype, "77 reference", [&](auto tag) {
        PKBW_TRY(attend<typename decltype(tag)::type>(ctx, d));
        return tk::finish(ctx);
    });
}
