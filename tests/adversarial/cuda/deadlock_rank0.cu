// Adversarial candidate (cuda): a device-side barrier on the signal pads in which rank 0's kernel
// waits for a value its peers never write, so rank 0's stream never drains (the engine's synchronise
// after the call hangs) while rank 1 passes the barrier, sums and returns. Expected: timeout naming
// rank 0 in phase candidate (rank 1 waits in the reference's NCCL call, under a longer deadline).
#include "adversarial_common.cuh"

namespace {

__global__ void barrier(std::uint32_t* const* pads, int rank, int world, std::uint32_t expected) {
    if (threadIdx.x != 0 || blockIdx.x != 0)
        return;
    for (int r = 0; r < world; ++r)
        atomicExch_system(&pads[r][rank], 1u);
    __threadfence_system();
    for (int r = 0; r < world; ++r)
        while (atomicAdd_system(&pads[rank][r], 0u) != expected) {
        }
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& in = ctx.input(0);
    const pkbw::SymmetricMemory sym = ctx.symmetric("deadlock", in.nbytes());
    cudaMemcpyAsync(sym.local, in.data, in.nbytes(), cudaMemcpyDeviceToDevice, ctx.stream());
    ctx.barrier(); // every input is published; from here on no host-side collective
    barrier<<<1, 32, 0, ctx.stream()>>>(sym.signal_pads_device, ctx.rank, ctx.world_size,
                                        ctx.rank == 0 ? 2u : 1u);
    adversarial::sum_peers<<<264, 512, 0, ctx.stream()>>>(sym.peers_device, ctx.world_size,
                                                          ctx.output(0).data, in.numel(), in.dtype);
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? 0 : ctx.fail(cudaGetErrorString(err));
}
