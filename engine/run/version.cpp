#include "version.h"

#include <dlfcn.h>

#if defined(PKBW_HAVE_CUDA)
#include <cuda_runtime_api.h>
#include <nccl.h>
#endif

#ifndef PKBW_VERSION
#define PKBW_VERSION "0.0.0"
#endif

namespace pkbw::cli {
namespace {

// dlopen keeps pkbw itself free of a CUDA dependency: the rank processes are what load CUDA.
class Library {
public:
    explicit Library(std::initializer_list<const char*> names) {
        for (const char* name : names) {
            handle_ = ::dlopen(name, RTLD_NOW | RTLD_LOCAL);
            if (handle_)
                break;
        }
    }
    ~Library() {
        if (handle_)
            ::dlclose(handle_);
    }
    template <class F>
    F symbol(const char* name) const {
        return handle_ ? reinterpret_cast<F>(::dlsym(handle_, name)) : nullptr;
    }

private:
    void* handle_ = nullptr;
};

std::string cuda_version(int v) {
    return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}
std::string nccl_version(int v) {
    // NCCL >= 2.9 encodes MAJOR*10000 + MINOR*100 + PATCH.
    return std::to_string(v / 10000) + "." + std::to_string((v % 10000) / 100) + "." +
           std::to_string(v % 100);
}

} // namespace

int nccl_compiled_version() {
#if defined(PKBW_HAVE_CUDA)
    return NCCL_VERSION_CODE;
#else
    return 0;
#endif
}

int nccl_loaded_version() {
    Library nccl({"libnccl.so.2", "libnccl.so"});
    int v = 0;
    if (auto get = nccl.symbol<int (*)(int*)>("ncclGetVersion"))
        get(&v);
    return v;
}

std::string nccl_device_api_refusal(const std::string& source) {
    const bool device_api =
        source.find("nccl_device") != std::string::npos || source.find("ncclDevComm") != std::string::npos;
    if (!device_api)
        return {};
    const int compiled = nccl_compiled_version(), loaded = nccl_loaded_version();
    if (compiled == 0 || loaded == 0 || compiled == loaded)
        return {};
    return "refused: the solution uses NCCL's device API, which has no ABI compatibility across releases, "
           "but it would be compiled against NCCL " +
           nccl_version(compiled) + " and run with NCCL " + nccl_version(loaded);
}

std::string version_text() {
    std::string text = std::string("pkbw ") + PKBW_VERSION + "\n";
#if defined(PKBW_HAVE_CUDA)
    text += "  built with CUDA " + cuda_version(CUDART_VERSION) + ", NCCL " +
            nccl_version(NCCL_VERSION_CODE) + "\n";
#else
    text += "  built without CUDA\n";
#endif
    Library cudart({"libcudart.so", "libcudart.so.12", "libcudart.so.13", "libcudart.so.11.0"});
    if (auto runtime = cudart.symbol<int (*)(int*)>("cudaRuntimeGetVersion")) {
        int v = 0;
        runtime(&v);
        text += "  loaded CUDA runtime " + cuda_version(v);
        if (auto driver = cudart.symbol<int (*)(int*)>("cudaDriverGetVersion")) {
            int d = 0;
            driver(&d);
            text += ", driver supports CUDA " +
                    (d > 0 ? cuda_version(d) : std::string("none: no NVIDIA driver is loaded"));
        }
        text += "\n";
    } else {
        text += "  CUDA runtime: not found\n";
    }
    Library nccl({"libnccl.so.2", "libnccl.so"});
    if (auto get = nccl.symbol<int (*)(int*)>("ncclGetVersion")) {
        int v = 0;
        get(&v);
        text += "  loaded NCCL " + nccl_version(v) + "\n";
    } else {
        text += "  NCCL: not found\n";
    }
    return text;
}

} // namespace pkbw::cli
