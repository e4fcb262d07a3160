// Hand-written sample candidate (not LLM output)
// PKB 28 (routing_map = expert_mask.sum(1); tokens permuted expert-major as masked_select; rows
// exchanged with all_to_all_single by input_splits/output_splits; received chunks (source rank w,
// local expert l) regrouped local expert first), baseline: a map kernel, a one-thread compaction
// kernel for the permutation, a gather kernel into a symmetric buffer, host barrier, one copy per
// peer into a staging buffer, one copy per (l, w) chunk into the output, host barrier.
#include "pkbw/solution.h"

#include <vector>

namespace {

__global__ void routing_map(const float* mask, long long experts, long long slots, long long tokens,
                            float* map) {
    for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < experts * tokens;
         i += static_cast<long long>(gridDim.x) * blockDim.x) {
        const long long e = i / tokens, t = i % tokens;
        float s = 0.f;
        for (long long j = 0; j < slots; ++j)
            s += mask[(e * slots + j) * tokens + t];
        map[i] = s;
    }
}

// Serial masked_select: fine for E * T of a few tens of thousands.
__global__ void compact(const float* map, long long experts, long long tokens, long long capacity,
                        long long* perm, long long* count) {
    long long n = 0;
    for (long long e = 0; e < experts; ++e)
        for (long long t = 0; t < tokens; ++t)
            if (map[e * tokens + t] != 0.f) {
                if (n < capacity)
                    perm[n] = t;
                ++n;
            }
    *count = n;
}

__global__ void gather(const char* src, const long long* perm, long long rows, long long row_bytes,
                       char* dst) {
    for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < rows * row_bytes;
         i += static_cast<long long>(gridDim.x) * blockDim.x)
        dst[i] = src[perm[i / row_bytes] * row_bytes + i % row_bytes];
}

unsigned blocks_for(long long n) {
    return static_cast<unsigned>(n / 256 + 1 > 4096 ? 4096 : n / 256 + 1);
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& hidden = ctx.input(0);
    const pkbw::TensorView& mask = ctx.input(1);
    const pkbw::TensorView& counts_dev = ctx.input(2);
    const int world = ctx.world_size, me = ctx.rank;
    const long long experts = mask.shape[0], slots = mask.shape[1], tokens = mask.shape[2];
    const long long local = experts / world;
    std::vector<double> send(world), recv(world);
    if (ctx.param_list("input_splits", send.data(), world) != world ||
        ctx.param_list("output_splits", recv.data(), world) != world) {
        return ctx.fail("need input_splits and output_splits with one entry per rank");
    }
    const long long capacity = ctx.output(2).numel();
    long long* perm = ctx.output(2).as<long long>();
    routing_map<<<blocks_for(experts * tokens), 256, 0, ctx.stream()>>>(
        mask.as<const float>(), experts, slots, tokens, ctx.output(1).as<float>());
    long long* count = static_cast<long long*>(ctx.scratch("moe28_count", sizeof(long long)));
    compact<<<1, 1, 0, ctx.stream()>>>(ctx.output(1).as<const float>(), experts, tokens, capacity, perm,
                                       count);
    long long rows = 0;
    std::vector<long long> c(static_cast<std::size_t>(counts_dev.numel()));
    cudaMemcpyAsync(&rows, count, sizeof rows, cudaMemcpyDeviceToHost, ctx.stream());
    cudaMemcpyAsync(c.data(), counts_dev.data, counts_dev.nbytes(), cudaMemcpyDeviceToHost, ctx.stream());
    cudaStreamSynchronize(ctx.stream());
    if (rows != capacity) {
        return ctx.fail("the mask does not route exactly the output's rows");
    }
    const long long row_bytes = static_cast<long long>(hidden.nbytes()) / hidden.shape[0];
    const pkbw::SymmetricMemory shared =
        ctx.symmetric("moe28_baseline", static_cast<std::size_t>(rows * row_bytes));
    gather<<<blocks_for(rows * row_bytes), 256, 0, ctx.stream()>>>(
        static_cast<const char*>(hidden.data), perm, rows, row_bytes, static_cast<char*>(shared.local));
    ctx.barrier();
    long long from = 0, total = 0;
    for (int p = 0; p < me; ++p)
        from += static_cast<long long>(send[p]);
    for (int p = 0; p < world; ++p)
        total += static_cast<long long>(recv[p]);
    char* staging =
        static_cast<char*>(ctx.scratch("moe28_staging", static_cast<std::size_t>(total * row_bytes)));
    long long at = 0;
    for (int p = 0; p < world; ++p) {
        const long long bytes = static_cast<long long>(recv[p]) * row_bytes;
        if (bytes > 0)
            cudaMemcpyAsync(staging + at, static_cast<const char*>(shared.peers[p]) + from * row_bytes, bytes,
                            cudaMemcpyDeviceToDevice, ctx.stream());
        at += bytes;
    }
    std::vector<long long> start(world * local);
    long long run = 0;
    for (long long i = 0; i < world * local; ++i) {
        start[i] = run;
        run += c[i];
    }
    if (run != total) {
        return ctx.fail("the counts do not match the received rows");
    }
    char* out = static_cast<char*>(ctx.output(0).data);
    for (long long l = 0; l < local; ++l)
        for (int w = 0; w < world; ++w) {
            const long long bytes = c[w * local + l] * row_bytes;
            if (bytes > 0)
                cudaMemcpyAsync(out, staging + start[w * local + l] * row_bytes, bytes,
                                cudaMemcpyDeviceToDevice, ctx.stream());
            out += bytes;
        }
    ctx.barrier();
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? 0 : ctx.fail(cudaGetErrorString(err));
}
