// Reference for PKB problem 74: PKB's TP x CP grid when W >= 4 and even (tk::tp_cp_groups(2)), else
// the world as CP; ncclAllGather of q, k, v, g, beta over CP (batch 1: the gathered [cp, L, ...] is
// the sequence); q and k L2-normalised and v widened (tk::delta_rule_prepare), the per-key-dim decay and
// sigmoid(beta) by one kernel; the toolkit's delta rule over all 16 heads rounds o to D;
// ncclAllReduce over TP; the rank's CP slice copied out.
#include "pkbw/solution.h"
#include "pkbw/toolkit/cp_layout.h"
#include "pkbw/toolkit/delta_rule.cuh"

#include <cmath>

namespace {

// decay[t, h, e] = exp(−5·sigmoid(exp(a_log[h])·(g + dt_bias[h·dk + e]))), beta_f = sigmoid(beta) (fp32).
template <class T>
__global__ void kda_gates(const T* g, const T* beta, const __nv_bfloat16* a_log, const __nv_bfloat16* dt_bias,
                          long long tokens, long long heads, long long key_dim, float* decay, float* beta_f) {
    using namespace pkbw::tk;
    for (long long i = PKBW_GRID_STRIDE_BEGIN; i < tokens * heads * key_dim; i += PKBW_GRID_STRIDE_STEP) {
        const long long h = (i / key_dim) % heads, e = i % key_dim;
        const float x =
            expf(__bfloat162float(a_log[h])) * (to_float(g[i]) + __bfloat162float(dt_bias[h * key_dim + e]));
        decay[i] = expf(-5.f / (1.f + expf(-x)));
        if (e == 0)
            beta_f[i / key_dim] = 1.f / (1.f + expf(-to_float(beta[i / key_dim])));
    }
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    namespace tk = pkbw::tk;
    const int tp = static_cast<int>(ctx.param("tp_size", 1));
    if (tp < 1 || ctx.world_size % tp != 0) {
        return ctx.fail("74 reference: tp_size must divide W");
    }
    const tk::CpGroups groups =
        tp > 1 ? tk::tp_cp_groups(ctx, tp)
               : tk::CpGroups{ctx.sub_comm_blocks(ctx.world_size), ctx.sub_comm_blocks(1)};
    const pkbw::TensorView& q = ctx.input(0);
    const long long seq = q.shape[1], heads = q.shape[2], dk = q.shape[3], dv = ctx.input(2).shape[3];
    const long long tokens = groups.cp.size * seq;
    const std::size_t es = pkbw::element_size(q.dtype);
    char* full[5];
    const char* names[5] = {"kda74_q", "kda74_k", "kda74_v", "kda74_g", "kda74_beta"};
    PKBW_CHECK(ctx, ncclGroupStart());
    for (int i = 0; i < 5; ++i) {
        full[i] = static_cast<char*>(ctx.scratch(names[i], ctx.input(i).nbytes() * groups.cp.size));
        PKBW_CHECK(ctx, ncclAllGather(ctx.input(i).data, full[i], ctx.input(i).nbytes(), ncclUint8,
                                      groups.cp.nccl(), ctx.stream()));
    }
    PKBW_CHECK(ctx, ncclGroupEnd());
    char* out = static_cast<char*>(ctx.scratch("kda74_out", tokens * heads * dv * es));
    tk::DeltaRuleShape sh;
    sh.steps = tokens;
    sh.heads = heads;
    sh.key_dim = dk;
    sh.value_dim = dv;
    const tk::DeltaRuleBuffers buf = tk::delta_rule_buffers(ctx, sh);
    PKBW_TRY(tk::dispatch_float(ctx, q.dtype, "74 reference", [&](auto tag) {
        using T = typename decltype(tag)::type;
        PKBW_TRY(tk::delta_rule_prepare<T>(ctx, sh, reinterpret_cast<const T*>(full[0]),
                                           reinterpret_cast<const T*>(full[1]),
                                           reinterpret_cast<const T*>(full[2]), 1e-12f, buf));
        kda_gates<T><<<tk::grid_for(tokens * heads * dk), 256, 0, ctx.stream()>>>(
            reinterpret_cast<const T*>(full[3]), reinterpret_cast<const T*>(full[4]),
            ctx.input(5).as<__nv_bfloat16>(), ctx.input(6).as<__nv_bfloat16>(), tokens, heads, dk, buf.decay,
            buf.beta);
        return tk::delta_rule<T>(ctx, sh, buf, reinterpret_cast<T*>(out));
    }));
    const long long count = tokens * heads * dv;
    if (tp > 1) {
        PKBW_CHECK(ctx, ncclAllReduce(out, out, static_cast<size_t>(count), pkbw::nccl_dtype(q.dtype),
                                      ncclSum, groups.other.nccl(), ctx.stream()));
    }
    const std::size_t slice = ctx.output(0).nbytes();
    PKBW_CHECK(ctx, cudaMemcpyAsync(ctx.output(0).data, out + groups.cp.rank * slice, slice,
                                    cudaMemcpyDeviceToDevice, ctx.stream()));
    return tk::finish(ctx);
}
