// Internal to safetensors.cpp (reading) and safetensors_write.cpp (writing): the on-disk constants of
// pkbw's safetensors files and the strict JSON parse both sides apply (docs/formats.md).
#pragma once

#include <bit>
#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace pkbw::safetensors_detail {

// The length field and every tensor's bytes are little-endian on disk; we copy them as they are.
static_assert(std::endian::native == std::endian::little, "safetensors I/O assumes a little-endian host");

// ordered_json keeps the header's key order, which is the tensors' output order.
using Json = nlohmann::ordered_json;

constexpr std::size_t kLengthBytes = 8;
constexpr std::string_view kMetadataKey = "__metadata__";
constexpr std::string_view kValuesKey = "pkbw.values";
// Variable-length outputs: {name: {"bound": B, "length": L}}; the tensor is the valid prefix.
constexpr std::string_view kLengthsKey = "pkbw.output_lengths";
// Output values are None, sizes, numbers and short lists; deeper nesting is refused so that a
// hostile file cannot make the (recursive) serializer overflow the stack.
constexpr int kMaxValueDepth = 64;

inline std::string json_quote(std::string_view text) {
    return Json(std::string(text)).dump(-1, ' ', false, Json::error_handler_t::replace);
}

// Parses `text` as JSON, refusing duplicate keys (nlohmann would keep one silently) and nesting
// deeper than `max_depth`. Errors are "<context>: ...".
Json parse_strict_json(std::string_view text, const std::string& context, int max_depth);

} // namespace pkbw::safetensors_detail
