// The prompt for pkbw's own solution ABI (`pkbw prompt --backend native|host`): the problem's
// description and per-rank contract from the problem registry, the ABI (docs/solution-abi.md and
// pkbw/solution.h), a baseline sample as the example, precision and hardware (docs/generate.md).
#pragma once

#include "pkbw/core/problem.h"

#include <filesystem>
#include <optional>
#include <string>

namespace pkbw::generate {

// Where the ABI text and the samples are read from (engine/run/locate's data root).
struct NativeSources {
    std::filesystem::path data_root;  // holds docs/solution-abi.md (source layout) and samples/
    std::filesystem::path abi_header; // pkbw/solution.h
};

struct NativePromptRequest {
    const Problem* problem = nullptr;
    std::string target = "cuda"; // "cuda" (.cu) or "host" (.cpp): the ABI backend compiled for
    std::string precision = "bf16";
    int world_size = 2;
    std::int64_t m = 1024, n = 1024;
    std::string hardware;               // free text ("" when unknown)
    std::string solution_relative_path; // the footer's "saved as" path
};

// The file extension and pkbw's solution name for a target: {"cu","cuda"} or {"cpp","host"}.
std::string native_extension(const std::string& target);

// Throws pkbw::Error naming what is missing (an unknown precision, an unreadable ABI header).
std::string native_user_prompt(const NativePromptRequest& request, const NativeSources& sources);
std::string native_system_prompt(const std::string& target);

// "bf16" / "fp16" / "fp32" (PKB's tokens) and pkbw's spellings to a DType, or nullopt.
std::optional<DType> precision_dtype(const std::string& precision);

} // namespace pkbw::generate
