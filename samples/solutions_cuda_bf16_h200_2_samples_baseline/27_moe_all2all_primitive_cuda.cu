// Hand-written sample candidate (not LLM output)
// PKB 27 (all_to_all_single of token rows with split lists: chunk p of local_tensor goes to rank p,
// the output packs the received chunks in source-rank order), baseline: copy the input into a
// symmetric buffer, host barrier, one device-to-device copy per peer pulling this rank's chunk,
// a last host barrier before the buffer is reused. Every rank has the same split lists (PKB's).
#include "pkbw/solution.h"

#include <vector>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& in = ctx.input(0);
    const pkbw::TensorView& out = ctx.output(0);
    const int world = ctx.world_size, me = ctx.rank;
    std::vector<double> send(world), recv(world);
    if (ctx.param_list("input_split_sizes", send.data(), world) != world ||
        ctx.param_list("output_split_sizes", recv.data(), world) != world) {
        return ctx.fail("need input_split_sizes and output_split_sizes with one entry per rank");
    }
    const std::size_t row_bytes = in.nbytes() / static_cast<std::size_t>(in.shape[0]);
    const pkbw::SymmetricMemory shared = ctx.symmetric("moe27_baseline", in.nbytes());
    cudaMemcpyAsync(shared.local, in.data, in.nbytes(), cudaMemcpyDeviceToDevice, ctx.stream());
    ctx.barrier();
    long long from = 0;
    for (int p = 0; p < me; ++p) {
        from += static_cast<long long>(send[p]);
    }
    char* dst = static_cast<char*>(out.data);
    for (int p = 0; p < world; ++p) {
        const std::size_t bytes = static_cast<std::size_t>(recv[p]) * row_bytes;
        if (bytes > 0) {
            cudaMemcpyAsync(dst, static_cast<const char*>(shared.peers[p]) + from * row_bytes, bytes,
                            cudaMemcpyDeviceToDevice, ctx.stream());
        }
        dst += bytes;
    }
    ctx.barrier();
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? 0 : ctx.fail(cudaGetErrorString(err));
}
