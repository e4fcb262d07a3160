// Checks on a candidate's source before it is launched. NVLink multicast (NVLS) hangs or faults on
// machines that lack it or where it is turned off, so a candidate whose code uses it is refused up
// front with the construct and line, instead of being launched into a hang, where multicast is off
// for its ranks; --allow-multicast runs it anyway (a machine with multicast). The host backend is
// never checked: nothing there can use multicast.
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

// How a source is read: C/C++/CUDA (.cu, .cpp, ...), or Python (PKB's .py solutions, whose CUDA is
// in string literals handed to load_inline).
enum class SourceLanguage { Cpp, Python };
SourceLanguage source_language(std::string_view path);

// The source with what is not code blanked (newlines kept, so line numbers stay right):
// C/C++: `//` and `/* */` comments; string literals are kept (inline PTX lives in them).
// Python: `#` comments and docstrings (a string literal that is a statement of its own); other
// string literals are kept (load_inline's CUDA source) with the C/C++ comments inside them blanked.
std::string code_only(std::string_view source, SourceLanguage language);

// The first use of NVLink multicast in code (code_only): PTX multimem instructions, the driver's
// cuMulticast* API, or a symmetric-memory multicast_ptr.
std::optional<SourceFinding> find_multicast_use(std::string_view source,
                                                SourceLanguage language = SourceLanguage::Cpp);

// Why multicast is off in `environment` ("NCCL_NVLS_ENABLE=0", "TORCH_SYMM_MEM_DISABLE_MULTICAST=1",
// "NVSHMEM_DISABLE_NVLS=1"), or "" when it is not.
std::string multicast_disabled_reason(const std::map<std::string, std::string>& environment);
std::string multicast_disabled_reason(); // this process's environment

struct MulticastCheck {
    std::string backend = "cuda"; // "host": never refused
    bool allowed = false;         // --allow-multicast
    // The multicast switches of this machine's environment (pkbw's own), and those pkbw itself adds
    // for the ranks where the environment does not set them (PKB runs: multicast off).
    std::map<std::string, std::string> machine;
    std::map<std::string, std::string> pkbw_adds;
};
// The multicast switches of this process's environment, as MulticastCheck::machine.
std::map<std::string, std::string> multicast_environment_here();

// "" when `source` (the file at `path`) may run, else the refusal: the file, line and construct,
// what turns multicast off for the ranks (this machine's environment, or pkbw's defaults), and how
// to run it where multicast exists (--allow-multicast).
std::string multicast_refusal(const std::string& path, std::string_view source, const MulticastCheck& check);

} // namespace pkbw::cli
