// `pkbw --version`: pkbw's version and, found at run time, the CUDA and NCCL libraries this machine
// would load (and, in a CUDA build, the versions pkbw was compiled against).
#pragma once

#include <string>

namespace pkbw::cli {

std::string version_text();

} // namespace pkbw::cli
