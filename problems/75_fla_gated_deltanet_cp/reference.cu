// Reference for PKB problem 75: each of q, k, v, gate, beta packed per destination head chunk
// (tk::permute) and exchanged with the toolkit all-to-all, which leaves [W·L, H/W, d] (batch 1);
// q and k L2-normalised and v widened in fp32 (tk::delta_rule_prepare), the decay and beta by a kernel;
// the toolkit's delta-rule recurrence (tk::delta_rule: one thread block per 32 value columns of a
// head, the state in registers) rounds o to D; o goes back by all-to-all and is unpacked (tk::permute).
#include "pkbw/solution.h"
#include "pkbw/toolkit/alltoall.cuh"
#include "pkbw/toolkit/delta_rule.cuh"
#include "pkbw/toolkit/permute.cuh"

namespace {

// decay[t, h, :] = exp(−exp(a_log[h]) · softplus(gate + dt_bias[h])) (fp32, torch's softplus threshold
// 20), and beta as fp32.
template <class T>
__global__ void gates(const T* gate, const T* beta, const __nv_bfloat16* a_log, const __nv_bfloat16* dt_bias,
                      long long tokens, long long heads, long long key_dim, float* decay, float* beta_f) {
    using namespace pkbw::tk;
    for (long long i = PKBW_GRID_STRIDE_BEGIN; i < tokens * heads; i += PKBW_GRID_STRIDE_STEP) {
        const long long h = i % heads;
        const float g = to_float(gate[i]) + __bfloat162float(dt_bias[h]);
        const float softplus = g > 20.f ? g : log1pf(expf(g));
        const float d = expf(-expf(__bfloat162float(a_log[h])) * softplus);
        for (long long e = 0; e < key_dim; ++e)
            decay[i * key_dim + e] = d;
        beta_f[i] = to_float(beta[i]);
    }
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    namespace tk = pkbw::tk;
    const int world = ctx.world_size;
    const pkbw::TensorView& q = ctx.input(0);
    const long long seq = q.shape[1], heads = q.shape[2], dk = q.shape[3], dv = ctx.input(2).shape[3];
    const long long lh = heads / world, tokens = world * seq;
    const std::size_t es = pkbw::element_size(q.dtype);
    // Sequence -> heads for input i (last dim d): [L, W, lh·d] -> [W, L, lh·d], all-to-all.
    char* recv[5];
    const long long dims[5] = {dk, dk, dv, 1, 1};
    const char* names[5] = {"gdn75_q", "gdn75_k", "gdn75_v", "gdn75_gate", "gdn75_beta"};
    char* send = static_cast<char*>(ctx.scratch("gdn75_send", seq * heads * dv * es));
    for (int i = 0; i < 5; ++i) {
        const std::size_t bytes = seq * heads * dims[i] * es;
        recv[i] = static_cast<char*>(ctx.scratch(names[i], bytes));
        const long long shape[] = {seq, world, lh * dims[i]};
        const int swap[] = {1, 0, 2};
        PKBW_TRY(tk::permute(ctx, ctx.input(i).data, send, es, 3, shape, swap));
        PKBW_TRY(tk::all_to_all(ctx, ctx.nccl(), send, recv[i], bytes / world));
    }
    char* heads_out = static_cast<char*>(ctx.scratch("gdn75_out", tokens * lh * dv * es));
    char* back = static_cast<char*>(ctx.scratch("gdn75_back", tokens * lh * dv * es));
    tk::DeltaRuleShape sh;
    sh.steps = tokens;
    sh.heads = lh;
    sh.key_dim = dk;
    sh.value_dim = dv;
    const tk::DeltaRuleBuffers buf = tk::delta_rule_buffers(ctx, sh);
    PKBW_TRY(tk::dispatch_float(ctx, q.dtype, "75 reference", [&](auto tag) {
        using T = typename decltype(tag)::type;
        PKBW_TRY(tk::delta_rule_prepare<T>(ctx, sh, reinterpret_cast<const T*>(recv[0]),
                                           reinterpret_cast<const T*>(recv[1]),
                                           reinterpret_cast<const T*>(recv[2]), 1e-6f, buf));
        gates<T><<<tk::grid_for(tokens * lh), 256, 0, ctx.stream()>>>(
            reinterpret_cast<const T*>(recv[3]), reinterpret_cast<const T*>(recv[4]),
            ctx.input(5).as<__nv_bfloat16>(), ctx.input(6).as<__nv_bfloat16>(), tokens, lh, dk, buf.decay,
            buf.beta);
        return tk::delta_rule<T>(ctx, sh, buf, reinterpret_cast<T*>(heads_out));
    }));
    // Heads -> sequence: token chunk p goes back to rank p, then [W, L, lh·dv] -> [L, W, lh·dv].
    PKBW_TRY(tk::all_to_all(ctx, ctx.nccl(), heads_out, back, seq * lh * dv * es));
    const long long shape[] = {world, seq, lh * dv};
    const int swap[] = {1, 0, 2};
    PKBW_TRY(tk::permute(ctx, back, ctx.output(0).data, es, 3, shape, swap));
    return tk::finish(ctx);
}
