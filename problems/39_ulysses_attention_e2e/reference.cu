// Reference for PKB problem 39: qkv = F.linear (cuBLAS); q's and the stacked (k, v)'s head chunks
// packed per destination (tk::strided_copy) and exchanged with the toolkit all-to-all; the head-axis
// attention (tk::attention_rounded: scores, softmax and output rounded to D as eager PyTorch) runs on
// the received [W, B, S, heads/W, ...] layout directly, since each token attends within itself; its
// result goes back to the token's sender with a second all-to-all, is concatenated along the heads
// (tk::permute) and projected (F.linear).
#include "pkbw/solution.h"
#include "pkbw/toolkit/alltoall.cuh"
#include "pkbw/toolkit/attention.cuh"
#include "pkbw/toolkit/gemm.cuh"
#include "pkbw/toolkit/permute.cuh"

#include <cmath>

namespace {

// The copy of qkv [rows, 3, heads, D] into per-destination chunks [W, rows, (pieces of) heads/W, D].
pkbw::tk::StridedCopy head_chunks(std::size_t elem, int world, long long rows, long long local_heads,
                                  long long head_dim, bool stacked_kv) {
    pkbw::tk::StridedCopy c;
    c.elem_bytes = elem;
    const long long token = 3 * world * local_heads * head_dim, piece = local_heads * head_dim;
    if (!stacked_kv) {
        c.ndim = 3;
        const long long shape[] = {world, rows, piece}, strides[] = {piece, token, 1};
        for (int d = 0; d < 3; ++d) {
            c.shape[d] = shape[d];
            c.strides[d] = strides[d];
        }
        return c;
    }
    // torch.stack([k, v], dim=3): [rows, heads, 2, D]; the k and v thirds are world * piece apart.
    c.ndim = 5;
    const long long shape[] = {world, rows, local_heads, 2, head_dim};
    const long long strides[] = {piece, token, head_dim, world * piece, 1};
    for (int d = 0; d < 5; ++d) {
        c.shape[d] = shape[d];
        c.strides[d] = strides[d];
    }
    return c;
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    namespace tk = pkbw::tk;
    const pkbw::TensorView& hidden = ctx.input(0);
    const pkbw::DType dt = hidden.dtype;
    const int world = ctx.world_size;
    const long long rows = hidden.shape[0] * hidden.shape[1], seq = hidden.shape[1], width = hidden.shape[2];
    const long long heads = static_cast<long long>(ctx.param("num_heads", 8)), head_dim = width / heads;
    if (heads % world != 0) {
        return ctx.fail("39 reference: W must divide num_heads");
    }
    const long long local_heads = heads / world, piece = local_heads * head_dim;
    const std::size_t es = pkbw::element_size(dt);
    char* qkv = static_cast<char*>(ctx.scratch("ulysses39_qkv", rows * 3 * width * es));
    char* q_send = static_cast<char*>(ctx.scratch("ulysses39_q_send", rows * width * es));
    char* q_recv = static_cast<char*>(ctx.scratch("ulysses39_q_recv", rows * width * es));
    char* kv_send = static_cast<char*>(ctx.scratch("ulysses39_kv_send", 2 * rows * width * es));
    char* kv_recv = static_cast<char*>(ctx.scratch("ulysses39_kv_recv", 2 * rows * width * es));
    char* attn = static_cast<char*>(ctx.scratch("ulysses39_attn", rows * width * es));
    char* back = static_cast<char*>(ctx.scratch("ulysses39_back", rows * width * es));
    char* context = static_cast<char*>(ctx.scratch("ulysses39_context", rows * width * es));

    PKBW_TRY(tk::linear(ctx, dt, rows, width, 3 * width, hidden.data, ctx.input(1).data, nullptr, qkv));
    PKBW_TRY(tk::strided_copy(ctx, qkv, q_send, head_chunks(es, world, rows, local_heads, head_dim, false)));
    PKBW_TRY(tk::strided_copy(ctx, qkv + width * es, kv_send,
                              head_chunks(es, world, rows, local_heads, head_dim, true)));
    PKBW_TRY(tk::all_to_all(ctx, ctx.nccl(), q_send, q_recv, rows * piece * es));
    PKBW_TRY(tk::all_to_all(ctx, ctx.nccl(), kv_send, kv_recv, 2 * rows * piece * es));

    // Token (source p, b, s) is problem (z0 = p * B + b, z1 = s); its local heads are the rows.
    const tk::AttnShape sh = tk::head_axis_shape(world * hidden.shape[0], seq, local_heads, head_dim);
    const tk::AttnView q_view = tk::head_axis_view(seq, local_heads, head_dim);
    const tk::AttnView k_view = tk::head_axis_view(seq, local_heads, 2 * head_dim);
    const tk::AttnView v_view = tk::head_axis_view(seq, local_heads, 2 * head_dim, head_dim);
    PKBW_TRY(tk::dispatch_float(ctx, dt, "39 reference", [&](auto tag) {
        using T = typename decltype(tag)::type;
        const tk::AttnInputs<T> in{reinterpret_cast<const T*>(q_recv),
                                   reinterpret_cast<const T*>(kv_recv),
                                   reinterpret_cast<const T*>(kv_recv),
                                   q_view,
                                   k_view,
                                   v_view};
        return tk::attention_rounded<T>(ctx, sh, in, reinterpret_cast<T*>(attn), q_view);
    }));
    // Sequence chunk p of the result is the tokens rank p sent: back to p, then cat along the heads.
    PKBW_TRY(tk::all_to_all(ctx, ctx.nccl(), attn, back, rows * piece * es));
    const long long received[] = {world, rows, piece};
    const int to_tokens[] = {1, 0, 2};
    PKBW_TRY(tk::permute(ctx, back, context, es, 3, received, to_tokens));
    PKBW_TRY(
        tk::linear(ctx, dt, rows, width, width, context, ctx.input(2).data, nullptr, ctx.output(0).data));
    return tk::finish(ctx);
}
