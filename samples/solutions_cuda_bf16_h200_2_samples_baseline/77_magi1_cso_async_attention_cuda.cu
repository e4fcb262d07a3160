// Hand-written sample candidate (not LLM output)
// PKB 77 (query [4S, Hq, 128] bf16, key_value [4S, Hkv, 256] = k | v, k_ranges [4, 2]; range i's keys are
// the first K = clip_token_nums of the W S tokens made of every rank's i-th slice of S tokens, in rank
// order; each query attends, without a mask, to its range's keys on key head h / (Hq / Hkv)), baseline:
// every output row is one query row's attention, so each rank computes its own rows where PKB moves them
// to head shards and back. key_value into a symmetric buffer, a host barrier, one warp per (token, head)
// streams the range's keys from their owners with an online softmax (fp32), a host barrier.
#include "pkbw/solution.h"

#include <cuda_bf16.h>

namespace {

using bf16 = __nv_bfloat16;

struct Peers {
    const bf16* p[8];
};

__global__ void attend(Peers kv, const bf16* q, bf16* out, long long tokens, long long heads,
                       long long kv_heads, long long slice, long long keys, float scale) {
    const long long warp = (blockIdx.x * (long long)blockDim.x + threadIdx.x) / 32;
    const int lane = threadIdx.x % 32;
    if (warp >= tokens * heads)
        return;
    const long long t = warp / heads, h = warp % heads, range = t / slice, g = h / (heads / kv_heads);
    float qv[4], acc[4] = {0.f, 0.f, 0.f, 0.f};
    for (int e = 0; e < 4; ++e)
        qv[e] = __bfloat162float(q[(t * heads + h) * 128 + lane * 4 + e]) * scale;
    float best = -INFINITY, total = 0.f;
    for (long long j = 0; j < keys; ++j) {
        const bf16* row = kv.p[j / slice] + ((range * slice + j % slice) * kv_heads + g) * 256;
        float dot = 0.f;
        for (int e = 0; e < 4; ++e)
            dot += qv[e] * __bfloat162float(row[lane * 4 + e]);
        for (int o = 16; o > 0; o /= 2)
            dot += __shfl_xor_sync(0xffffffffu, dot, o);
        const float top = fmaxf(best, dot), shrink = __expf(best - top), p = __expf(dot - top);
        total = total * shrink + p;
        for (int e = 0; e < 4; ++e)
            acc[e] = acc[e] * shrink + p * __bfloat162float(row[128 + lane * 4 + e]);
        best = top;
    }
    for (int e = 0; e < 4; ++e)
        out[(t * heads + h) * 128 + lane * 4 + e] = __float2bfloat16(acc[e] / total);
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& query = ctx.input(0);
    const pkbw::TensorView& key_value = ctx.input(1);
    if (query.dtype != pkbw::DType::BF16 || query.shape[2] != 128)
        return ctx.fail("this sample handles bf16 and head_dim 128");
    if (ctx.world_size > 8)
        return ctx.fail("this sample handles up to 8 ranks");
    const long long ranges = static_cast<long long>(ctx.param("cp_shuffle_num", 4)),
                    keys = static_cast<long long>(ctx.param("clip_token_nums", 0)), tokens = query.shape[0],
                    heads = query.shape[1], kv_heads = key_value.shape[1], slice = tokens / ranges;
    const pkbw::SymmetricMemory kvs = ctx.symmetric("magi77_kv", key_value.nbytes());
    cudaMemcpyAsync(kvs.local, key_value.data, key_value.nbytes(), cudaMemcpyDeviceToDevice, ctx.stream());
    ctx.barrier();
    Peers peers{};
    for (int r = 0; r < ctx.world_size; ++r)
        peers.p[r] = static_cast<const bf16*>(kvs.peers[r]);
    const long long warps = tokens * heads;
    attend<<<static_cast<unsigned>((warps * 32 + 255) / 256), 256, 0, ctx.stream()>>>(
        peers, query.as<bf16>(), ctx.output(0).as<bf16>(), tokens, heads, kv_heads, slice, keys,
        0.08838834764831845f);
    ctx.barrier();
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? 0 : ctx.fail(cudaGetErrorString(err));
}
