#include "cuda_graph.h"

#include "pkbw/core/status.h"

#include <algorithm>
#include <cuda_runtime.h>
#include <exception>
#include <stdexcept>
#include <string>
#include <vector>

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

// Where a captured call copies from host memory (a memcpy node whose source is pageable, pinned or
// managed memory), what it copied; "" when no node does. A call's cudaMemcpyAsync from host memory reads it
// when the call runs (pageable memory is staged before the call returns); a replay of its capture reads the
// same address when the replay runs, after the call's host code has moved on: a local vector freed, a
// buffer the next call rewrote. So its replays compute on other data than the call did (on the H200 a
// sample that copied its per-call counts from a local vector read freed memory and crashed the run).
// Child graphs are searched too. Not seen here: kernels that read host memory themselves (mapped pinned
// memory), host nodes, and the bodies of conditional nodes (a call would have to build them on purpose).
std::string host_source_copy(cudaGraph_t graph) {
    std::size_t count = 0;
    if (cudaGraphGetNodes(graph, nullptr, &count) != cudaSuccess) {
        (void)cudaGetLastError();
        return "";
    }
    std::vector<cudaGraphNode_t> nodes(count);
    if (count == 0 || cudaGraphGetNodes(graph, nodes.data(), &count) != cudaSuccess) {
        (void)cudaGetLastError();
        return "";
    }
    for (cudaGraphNode_t node : nodes) {
        cudaGraphNodeType type{};
        if (cudaGraphNodeGetType(node, &type) != cudaSuccess) {
            (void)cudaGetLastError();
            continue;
        }
        if (type == cudaGraphNodeTypeGraph) {
            cudaGraph_t child = nullptr;
            if (cudaGraphChildGraphNodeGetGraph(node, &child) == cudaSuccess && child != nullptr) {
                if (std::string found = host_source_copy(child); !found.empty()) {
                    return found;
                }
            }
            (void)cudaGetLastError();
            continue;
        }
        cudaMemcpy3DParms copy{};
        if (type != cudaGraphNodeTypeMemcpy || cudaGraphMemcpyNodeGetParams(node, &copy) != cudaSuccess ||
            copy.srcArray != nullptr || copy.srcPtr.ptr == nullptr) {
            (void)cudaGetLastError();
            continue;
        }
        cudaPointerAttributes where{};
        const cudaError_t asked = cudaPointerGetAttributes(&where, copy.srcPtr.ptr);
        (void)cudaGetLastError();
        // Managed memory too: the host may rewrite it between the capture and a replay.
        if (asked == cudaSuccess &&
            (where.type == cudaMemoryTypeUnregistered || where.type == cudaMemoryTypeHost ||
             where.type == cudaMemoryTypeManaged)) {
            const std::size_t bytes = copy.extent.width * std::max<std::size_t>(copy.extent.height, 1) *
                                      std::max<std::size_t>(copy.extent.depth, 1);
            return "a call copies " + std::to_string(bytes) + " bytes from " +
                   (where.type == cudaMemoryTypeHost      ? "pinned host"
                    : where.type == cudaMemoryTypeManaged ? "managed"
                                                          : "pageable host") +
                   " memory (cudaMemcpyAsync): a graph replay reads that memory when it runs, after the "
                   "call's host code has moved on, not what the call copied (pass such values as kernel "
                   "arguments, or copy them from device memory)";
        }
    }
    return "";
}

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
    if (std::string why = host_source_copy(graph); !why.empty()) {
        cudaGraphDestroy(graph);
        throw DeviceError("capture", why);
    }
    return std::make_unique<CudaGraph>(stream, graph);
}

} // namespace pkbw::engine
