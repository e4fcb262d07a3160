#include "cuda_graph.h"

#include "pkbw/core/status.h"

#include <cuda_runtime.h>
#include <exception>
#include <stdexcept>
#include <string>

namespace pkbw::engine {
namespace {

std::string cuda_text(cudaError_t status) {
    return std::string(cudaGetErrorName(status)) + ": " + cudaGetErrorString(status);
}

// Owns the captured graph and its executable instance.
class CudaGraph final : public CapturedCalls {
public:
    CudaGraph(cudaStream_t stream, cudaGraph_t graph)
        : stream_(stream)
        , graph_(graph) {
        if (const cudaError_t status = cudaGraphInstantiate(&exec_, graph_, 0); status != cudaSuccess) {
            cudaGraphDestroy(graph_);
            (void)cudaGetLastError();
            throw DeviceError("capture", "the captured calls cannot be instantiated as a CUDA graph: " +
                                             cuda_text(status));
        }
    }
    ~CudaGraph() override {
        cudaGraphExecDestroy(exec_);
        cudaGraphDestroy(graph_);
    }
    CudaGraph(const CudaGraph&) = delete;
    CudaGraph& operator=(const CudaGraph&) = delete;

    void launch() override {
        if (const cudaError_t status = cudaGraphLaunch(exec_, stream_); status != cudaSuccess) {
            throw DeviceError(status::kKindCudaError, "cudaGraphLaunch: " + cuda_text(status));
        }
    }

private:
    cudaStream_t stream_;
    cudaGraph_t graph_ = nullptr;
    cudaGraphExec_t exec_ = nullptr;
};

} // namespace

std::unique_ptr<CapturedCalls> capture_cuda_graph(void* stream_handle, const std::function<void()>& enqueue) {
    auto* stream = static_cast<cudaStream_t>(stream_handle);
    (void)cudaGetLastError(); // an earlier error must not be read as the capture's
    // Thread-local: the calls' own unsafe APIs (synchronisation, cudaMalloc, the legacy stream) fail the
    // capture; another thread of the process is not affected.
    if (const cudaError_t status = cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal);
        status != cudaSuccess) {
        throw DeviceError("capture", "cudaStreamBeginCapture: " + cuda_text(status));
    }
    std::string failure;
    try {
        enqueue();
    } catch (const std::exception& error) {
        failure = error.what();
    } catch (...) {
        failure = "an exception that is not a std::exception";
    }
    cudaGraph_t graph = nullptr;
    const cudaError_t ended = cudaStreamEndCapture(stream, &graph);
    const cudaError_t pending = cudaGetLastError(); // what a call's launch left, cleared
    if (!failure.empty() || ended != cudaSuccess || graph == nullptr) {
        if (graph != nullptr) {
            cudaGraphDestroy(graph);
        }
        std::string why = !failure.empty() ? failure : "cudaStreamEndCapture: " + cuda_text(ended);
        if (pending != cudaSuccess && failure.empty()) {
            why += " (after " + cuda_text(pending) + ")";
        }
        throw DeviceError("capture", why);
    }
    return std::make_unique<CudaGraph>(stream, graph);
}

} // namespace pkbw::engine
