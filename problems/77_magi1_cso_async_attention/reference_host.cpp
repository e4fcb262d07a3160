// Host oracle for PKB problem 77: every rank's key_value gathered; for each of the 4 ranges, its keys
// (the first K of the W S tokens of every rank's i-th slice, in rank order) and this rank's S queries of
// the range, every query head on its group's key head, through the toolkit's float64 attention
// (tk::gqa_attention_f64), rounded once. The all-to-alls only move whole rows and heads, so the
// oracle computes this rank's rows where they end up; the head grouping after PKB's repeat of the
// key/value heads is the grouping of the original heads (Hq / Hkv queries per key head).
#include "pkbw/solution.h"
#include "pkbw/toolkit/gqa_attention_host.h"
#include "pkbw/toolkit/host.h"

#include <cmath>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    namespace tk = pkbw::tk;
    const pkbw::TensorView& query = ctx.input(0);
    const pkbw::TensorView& key_value = ctx.input(1);
    const int world = ctx.world_size;
    const long long ranges = static_cast<long long>(ctx.param("cp_shuffle_num", 4)),
                    keys = static_cast<long long>(ctx.param("clip_token_nums", 0)), tokens = query.shape[0],
                    q_heads = query.shape[1], dim = query.shape[2], kv_heads = key_value.shape[1],
                    width = key_value.shape[2], slice = tokens / ranges;
    if (tokens % ranges != 0 || keys < 1 || keys > world * slice || width != 2 * dim ||
        q_heads % kv_heads != 0) {
        return ctx.fail("77 oracle: inconsistent shapes or params");
    }
    const std::vector<double> q = tk::to_f64(query);
    const std::vector<double> all_kv = tk::all_gather_f64(ctx, tk::to_f64(key_value)); // [W, tokens, Hkv, 2d]
    const long long row = kv_heads * width;
    std::vector<double> range_kv(static_cast<std::size_t>(keys * row));
    std::vector<double> out(static_cast<std::size_t>(tokens * q_heads * dim));
    for (long long i = 0; i < ranges; ++i) {
        for (long long j = 0; j < keys; ++j) {
            const double* from =
                &all_kv[static_cast<std::size_t>(((j / slice) * tokens + i * slice + j % slice) * row)];
            std::copy(from, from + row, range_kv.begin() + j * row);
        }
        tk::GqaShape s;
        s.queries = slice;
        s.keys = keys;
        s.q_heads = q_heads;
        s.kv_heads = kv_heads;
        s.head_dim = dim;
        s.scale = 1.0 / std::sqrt(static_cast<double>(dim));
        s.q = s.out = {q_heads * dim, dim};
        s.k = s.v = {row, width};
        const std::size_t first = static_cast<std::size_t>(i * slice * q_heads * dim);
        tk::gqa_attention_f64(s, &q[first], range_kv.data(), range_kv.data() + dim, &out[first]);
    }
    tk::store_all(ctx.output(0), out);
    return 0;
}
