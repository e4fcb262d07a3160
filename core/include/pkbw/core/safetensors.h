// Per-rank outputs on disk, in the safetensors format (8-byte little-endian header length, a JSON
// header mapping names to {dtype, shape, data_offsets}, then the data), which Hugging Face's
// `safetensors.torch.load_file` reads in one call. Reading is strict: every violation is a
// pkbw::FormatError whose message starts with the file name and names the field.
#pragma once

#include "pkbw/core/outputs.h"

#include <cstdint>
#include <map>
#include <span>
#include <string>

namespace pkbw {

// Largest JSON header accepted (the format's own reference implementation uses 100 MB).
inline constexpr std::uint64_t kSafetensorsMaxHeaderBytes = 100ull * 1000 * 1000;

struct SafetensorsFile {
    OutputSet outputs;                           // tensors (views of the mapped file) and values
    std::map<std::string, std::string> metadata; // the "__metadata__" entries, pkbw's own removed
};

// Writes `outputs` (non-contiguous tensors are written contiguous) plus `metadata` to `path`,
// atomically (a temporary file renamed into place). Non-tensor values go into __metadata__ under
// "pkbw.values" as a JSON object. Throws pkbw::Error naming the path on I/O failure.
void write_safetensors(const std::string& path, const OutputSet& outputs,
                       const std::map<std::string, std::string>& metadata = {});

// Reads and validates `path`; tensors view the file's mapping (no copy).
SafetensorsFile read_safetensors(const std::string& path);
// Validates and parses an in-memory image. `source_name` is used in error messages. The tensors
// copy their bytes out of `bytes`.
SafetensorsFile parse_safetensors(std::span<const std::byte> bytes, const std::string& source_name);

} // namespace pkbw
