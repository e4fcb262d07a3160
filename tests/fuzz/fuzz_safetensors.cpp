// libFuzzer target: parse_safetensors on arbitrary bytes. A pkbw::Error is the expected outcome
// for bad input; any other exception, a crash or a sanitizer report is a finding.
#include "pkbw/core/error.h"
#include "pkbw/core/safetensors.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    try {
        const pkbw::SafetensorsFile file =
            pkbw::parse_safetensors({reinterpret_cast<const std::byte*>(data), size}, "fuzz");
        // Whatever was accepted must be self-consistent: every element readable, sizes within the input.
        std::size_t total = 0;
        for (const auto& [name, tensor] : file.outputs.tensors) {
            if (name.empty() || !tensor.defined() || tensor.nbytes() > size)
                std::abort();
            total += tensor.nbytes();
            volatile double sink = 0;
            for (std::int64_t i = 0; i < tensor.numel(); ++i)
                sink = sink + tensor.get_f64(i);
        }
        if (total > size)
            std::abort();
    } catch (const pkbw::Error&) {
    }
    return 0;
}
