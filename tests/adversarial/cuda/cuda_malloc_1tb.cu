// Adversarial candidate (cuda): cudaMalloc of 1 TB, far past any GPU's memory. Expected: error, the
// message names CUDA's out-of-memory error (the candidate checks and fails; the rank survives).
#include "adversarial_common.cuh"

#include <string>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    void* big = nullptr;
    const cudaError_t err = cudaMalloc(&big, std::size_t(1) << 40);
    if (err != cudaSuccess) {
        cudaGetLastError(); // allocation errors are not sticky; clear it anyway
        static std::string message;
        message = std::string("cudaMalloc(1 TB): ") + cudaGetErrorString(err);
        return ctx.fail(message.c_str());
    }
    cudaFree(big);
    return adversarial::all_reduce(ctx, "huge");
}
