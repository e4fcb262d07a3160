// Checks on a candidate's source before it is launched. NVLink multicast (NVLS) hangs or faults on
// machines where it is disabled, so when the environment says it is off a candidate that uses it is
// refused up front with the construct and line, instead of being launched into a hang.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace pkbw::cli {

struct SourceFinding {
    std::string construct; // "multimem", "cuMulticast", "multicast_ptr"
    int line = 0;          // 1-based
    std::string text;      // the line, trimmed
};

// The first use of NVLink multicast outside comments: PTX multimem instructions, the driver's
// cuMulticast* API, or a symmetric-memory multicast_ptr.
std::optional<SourceFinding> find_multicast_use(std::string_view source);

// Why multicast is off in `environment` ("NCCL_NVLS_ENABLE=0", "TORCH_SYMM_MEM_DISABLE_MULTICAST=1"),
// or "" when it is not.
std::string multicast_disabled_reason(const std::map<std::string, std::string>& environment);
std::string multicast_disabled_reason(); // this process's environment

} // namespace pkbw::cli
