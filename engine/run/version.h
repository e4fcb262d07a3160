// `pkbw --version`: pkbw's version and, found at run time, the CUDA and NCCL libraries this machine
// would load (and, in a CUDA build, the versions pkbw was compiled against).
#pragma once

#include <string>

namespace pkbw::cli {

std::string version_text();

// NCCL_VERSION_CODE of the nccl.h pkbw (and so candidates on this machine) compiled against, and the
// version of the libnccl this machine loads (ncclGetVersion through dlopen); 0 when unknown.
int nccl_compiled_version();
int nccl_loaded_version();
// Why a solution that uses NCCL's device API (nccl_device.h, no ABI compatibility across releases)
// must be refused on this machine, or "" when the loaded and compiled NCCL agree or are unknown.
std::string nccl_device_api_refusal(const std::string& source);

} // namespace pkbw::cli
