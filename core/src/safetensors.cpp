// Safetensors reading (writing is in safetensors_write.cpp). docs/formats.md ("Per-rank outputs:
// safetensors") states the rules enforced here; they match what Hugging Face's reference implementation
// accepts, plus checks of our own (duplicate keys, unknown fields), so that a file that loads here also loads
// with load_file.
#include "pkbw/core/safetensors.h"

#include "pkbw/core/error.h"
#include "safetensors_format.h"

#include <algorithm>
#include <filesystem>
#include <numeric>
#include <string_view>
#include <unordered_set>

namespace pkbw {

namespace safetensors_detail {

// Parses `text` as JSON, refusing duplicate keys (nlohmann would keep one silently) and nesting
// deeper than `max_depth`. Errors are "<context>: ...".
Json parse_strict_json(std::string_view text, const std::string& context, int max_depth) {
    struct Frame {
        bool object;
        std::unordered_set<std::string> keys;
        std::string last_key;
    };
    std::vector<Frame> frames;
    auto check = [&](int, Json::parse_event_t event, Json& parsed) {
        switch (event) {
        case Json::parse_event_t::object_start:
        case Json::parse_event_t::array_start:
            if (static_cast<int>(frames.size()) >= max_depth)
                throw FormatError(context + ": JSON nested deeper than " + std::to_string(max_depth) +
                                  " levels");
            frames.push_back({event == Json::parse_event_t::object_start, {}, {}});
            break;
        case Json::parse_event_t::key: {
            const auto& key = parsed.get_ref<const std::string&>();
            Frame& frame = frames.back();
            if (!frame.keys.insert(key).second) {
                std::string where = " at the top level";
                if (frames.size() > 1 && frames[frames.size() - 2].object)
                    where = " in " + json_quote(frames[frames.size() - 2].last_key);
                throw FormatError(context + ": duplicate key " + json_quote(key) + where);
            }
            frame.last_key = key;
            break;
        }
        case Json::parse_event_t::object_end:
        case Json::parse_event_t::array_end:
            frames.pop_back();
            break;
        case Json::parse_event_t::value:
            break;
        }
        return true;
    };
    // nlohmann stops at a NUL as if the input ended there, which would accept "{}\0garbage".
    if (const auto nul = text.find('\0'); nul != std::string_view::npos)
        throw FormatError(context + ": not well-formed JSON (NUL byte at offset " + std::to_string(nul) +
                          ")");
    try {
        return Json::parse(text.begin(), text.end(), check);
    } catch (const Json::exception& e) { // parse_error, or out_of_range for a number like 1e400
        throw FormatError(context + ": not well-formed JSON (" + e.what() + ")");
    }
}

} // namespace safetensors_detail

namespace {

using namespace safetensors_detail;

std::string an(const Json& value) {
    const std::string type = value.is_number_float() ? "non-integer number" : value.type_name();
    const bool vowel = std::string_view("aeiou").find(type[0]) != std::string_view::npos;
    return (vowel ? "an " : "a ") + type;
}

std::uint64_t read_le_u64(const std::byte* p) {
    std::uint64_t value = 0;
    for (int i = 7; i >= 0; --i)
        value = (value << 8) | static_cast<std::uint64_t>(p[i]);
    return value;
}

struct Entry {
    std::string name;
    DType dtype = DType::F32;
    Shape shape;
    std::uint64_t begin = 0;
    std::uint64_t end = 0;
};

struct Layout {
    std::vector<Entry> entries; // header order
    std::map<std::string, std::string> metadata;
    std::map<std::string, std::string> values;
    std::map<std::string, OutputLength> lengths;
    std::size_t data_start = 0;
};

std::uint64_t parse_offset(const Json& value, const std::string& where, int index) {
    if (!value.is_number_unsigned())
        throw FormatError(where + ": data_offsets[" + std::to_string(index) + "] is " + an(value) +
                          ", not a non-negative integer");
    return value.get<std::uint64_t>();
}

Entry parse_entry(const std::string& name, const Json& value, const std::string& src,
                  std::uint64_t data_size) {
    const std::string where = src + ": tensor " + json_quote(name);
    if (name.empty())
        throw FormatError(src + ": header: empty tensor name");
    if (!value.is_object())
        throw FormatError(where + ": entry is " + an(value) + ", not an object");
    for (const auto& [key, field] : value.items()) {
        if (key != "dtype" && key != "shape" && key != "data_offsets")
            throw FormatError(where + ": unknown field " + json_quote(key));
    }
    for (const char* field : {"dtype", "shape", "data_offsets"}) {
        if (!value.contains(field))
            throw FormatError(where + ": missing field \"" + field + "\"");
    }
    Entry entry;
    entry.name = name;

    const Json& dtype = value["dtype"];
    if (!dtype.is_string())
        throw FormatError(where + ": dtype is " + an(dtype) + ", not a string");
    const auto parsed_dtype = dtype_from_safetensors_name(dtype.get_ref<const std::string&>());
    if (!parsed_dtype)
        throw FormatError(where + ": dtype: unknown dtype " +
                          json_quote(dtype.get_ref<const std::string&>()));
    entry.dtype = *parsed_dtype;

    const Json& shape = value["shape"];
    if (!shape.is_array())
        throw FormatError(where + ": shape is " + an(shape) + ", not a list");
    // Strides are products of the dimensions (zeros counted as 1) and must fit in int64 too.
    std::uint64_t numel = 1, stride_span = 1;
    bool overflow = false;
    for (std::size_t i = 0; i < shape.size(); ++i) {
        const Json& dim = shape[i];
        if (!dim.is_number_unsigned())
            throw FormatError(where + ": shape[" + std::to_string(i) + "] is " +
                              (dim.is_number_integer() ? dim.dump() : an(dim)) +
                              ", not a non-negative integer");
        if (dim.get<std::uint64_t>() > INT64_MAX)
            throw FormatError(where + ": shape[" + std::to_string(i) + "] is " + dim.dump() +
                              ", larger than a dimension can be");
        const auto d = dim.get<std::uint64_t>();
        entry.shape.push_back(static_cast<std::int64_t>(d));
        overflow = overflow || __builtin_mul_overflow(numel, d, &numel) ||
                   __builtin_mul_overflow(stride_span, std::max<std::uint64_t>(d, 1), &stride_span);
    }
    std::uint64_t nbytes = 0;
    if (overflow || numel > INT64_MAX || stride_span > INT64_MAX ||
        __builtin_mul_overflow(numel, dtype_size(entry.dtype), &nbytes))
        throw FormatError(where + ": shape " + shape_to_string(entry.shape) + " overflows the element count");

    const Json& offsets = value["data_offsets"];
    if (!offsets.is_array() || offsets.size() != 2)
        throw FormatError(where + ": data_offsets is " +
                          (offsets.is_array() ? "a list of " + std::to_string(offsets.size()) : an(offsets)) +
                          ", not a list of two integers");
    entry.begin = parse_offset(offsets[0], where, 0);
    entry.end = parse_offset(offsets[1], where, 1);
    if (entry.begin > entry.end)
        throw FormatError(where + ": data_offsets begin " + std::to_string(entry.begin) + " is after end " +
                          std::to_string(entry.end));
    if (entry.end > data_size)
        throw FormatError(where + ": data_offsets end " + std::to_string(entry.end) +
                          " is past the end of the data section (" + std::to_string(data_size) + " bytes)");
    if (entry.end - entry.begin != nbytes)
        throw FormatError(where + ": data_offsets cover " + std::to_string(entry.end - entry.begin) +
                          " bytes but shape " + shape_to_string(entry.shape) + " of " +
                          std::string(safetensors_dtype_name(entry.dtype)) + " needs " +
                          std::to_string(nbytes));
    return entry;
}

std::int64_t length_field(const Json& entry, const char* field, const std::string& where) {
    if (!entry.contains(field) || !entry.at(field).is_number_integer())
        throw FormatError(where + ": field '" + field + "' is missing or not an integer");
    return entry.at(field).get<std::int64_t>();
}

void parse_lengths(const std::string& text, const std::string& where, Layout& layout) {
    const Json lengths = parse_strict_json(text, where, kMaxValueDepth);
    if (!lengths.is_object())
        throw FormatError(where + " is " + an(lengths) + ", not an object");
    for (const auto& [name, entry] : lengths.items()) {
        const std::string entry_where = where + ": " + json_quote(name);
        if (!entry.is_object())
            throw FormatError(entry_where + " is " + an(entry) + ", not an object");
        const OutputLength length{length_field(entry, "bound", entry_where),
                                  length_field(entry, "length", entry_where)};
        if (length.bound < 0)
            throw FormatError(entry_where + ": negative bound " + std::to_string(length.bound));
        layout.lengths.emplace(name, length);
    }
}

void parse_metadata(const Json& value, const std::string& src, Layout& layout) {
    const std::string where = src + ": __metadata__";
    if (!value.is_object())
        throw FormatError(where + " is " + an(value) + ", not an object");
    for (const auto& [key, item] : value.items()) {
        if (!item.is_string())
            throw FormatError(where + ": value of " + json_quote(key) + " is " + an(item) + ", not a string");
        if (key == kLengthsKey) {
            parse_lengths(item.get_ref<const std::string&>(), where + ": " + std::string(kLengthsKey),
                          layout);
            continue;
        }
        if (key != kValuesKey) {
            layout.metadata.emplace(key, item.get<std::string>());
            continue;
        }
        const std::string values_where = where + ": " + std::string(kValuesKey);
        const Json values =
            parse_strict_json(item.get_ref<const std::string&>(), values_where, kMaxValueDepth);
        if (!values.is_object())
            throw FormatError(values_where + " is " + an(values) + ", not an object");
        for (const auto& [name, v] : values.items())
            layout.values.emplace(name, v.dump());
    }
}

// Tensors must tile the data section exactly: no overlap, no hole, nothing after the last one.
// The reference implementation refuses the same files (MetadataIncompleteBuffer, InvalidOffset).
void check_coverage(const std::vector<Entry>& entries, std::uint64_t data_size, const std::string& src) {
    std::vector<std::size_t> order(entries.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        return std::pair(entries[a].begin, entries[a].end) < std::pair(entries[b].begin, entries[b].end);
    });
    std::uint64_t covered = 0;
    const Entry* previous = nullptr;
    for (std::size_t i : order) {
        const Entry& e = entries[i];
        if (e.begin < covered)
            throw FormatError(src + ": tensor " + json_quote(e.name) + ": data_offsets [" +
                              std::to_string(e.begin) + ", " + std::to_string(e.end) + ") overlap tensor " +
                              json_quote(previous->name));
        if (e.begin > covered)
            throw FormatError(src + ": data section bytes [" + std::to_string(covered) + ", " +
                              std::to_string(e.begin) + ") are not covered by any tensor's data_offsets");
        previous = &e;
        covered = e.end;
    }
    if (covered != data_size)
        throw FormatError(src + ": data section bytes [" + std::to_string(covered) + ", " +
                          std::to_string(data_size) + ") are not covered by any tensor's data_offsets");
}

Layout parse_layout(std::span<const std::byte> bytes, const std::string& src) {
    if (bytes.size() < kLengthBytes)
        throw FormatError(src + ": file is " + std::to_string(bytes.size()) +
                          " bytes, shorter than the 8-byte header length");
    const std::uint64_t n = read_le_u64(bytes.data());
    if (n == 0)
        throw FormatError(src + ": header length is 0");
    if (n > kSafetensorsMaxHeaderBytes)
        throw FormatError(src + ": header length " + std::to_string(n) + " exceeds the limit of " +
                          std::to_string(kSafetensorsMaxHeaderBytes) + " bytes");
    if (n > bytes.size() - kLengthBytes)
        throw FormatError(src + ": header length " + std::to_string(n) + " runs past the end of the file (" +
                          std::to_string(bytes.size() - kLengthBytes) + " bytes follow the length)");

    const std::string_view text(reinterpret_cast<const char*>(bytes.data()) + kLengthBytes, n);
    // kMaxValueDepth is far above the header's own depth (3), and bounds the work on hostile input.
    const Json header = parse_strict_json(text, src + ": header", kMaxValueDepth);
    if (!header.is_object())
        throw FormatError(src + ": header is " + an(header) + ", not an object");
    if (text.front() != '{')
        throw FormatError(src + ": header does not start with '{' (the reference reader refuses it)");

    Layout layout;
    layout.data_start = kLengthBytes + n;
    const std::uint64_t data_size = bytes.size() - layout.data_start;
    for (const auto& [key, value] : header.items()) {
        if (key == kMetadataKey)
            parse_metadata(value, src, layout);
        else
            layout.entries.push_back(parse_entry(key, value, src, data_size));
    }
    check_coverage(layout.entries, data_size, src);
    std::unordered_set<std::string_view> tensor_names;
    for (const Entry& e : layout.entries)
        tensor_names.insert(e.name);
    for (const auto& [name, text_value] : layout.values) {
        if (tensor_names.contains(name))
            throw FormatError(src + ": __metadata__: " + std::string(kValuesKey) + ": value " +
                              json_quote(name) + " has the name of a tensor");
    }
    // A length names a tensor whose leading dimension is its valid prefix (0 rows for a length out of range).
    for (const auto& [name, length] : layout.lengths) {
        const auto entry = std::find_if(layout.entries.begin(), layout.entries.end(),
                                        [&](const Entry& e) { return e.name == name; });
        const std::string where =
            src + ": __metadata__: " + std::string(kLengthsKey) + ": " + json_quote(name);
        if (entry == layout.entries.end())
            throw FormatError(where + " names no tensor");
        const std::int64_t rows = entry->shape.empty() ? -1 : entry->shape[0];
        if (rows != (length.valid() ? length.reported : 0))
            throw FormatError(where + ": the tensor has " + std::to_string(rows) + " rows for length " +
                              std::to_string(length.reported) + " of " + std::to_string(length.bound));
    }
    return layout;
}

} // namespace

SafetensorsFile read_safetensors(const std::string& path) {
    // Checked before mapping so that a short or empty file gets the format's message, not mmap's.
    std::error_code ec;
    const auto size = std::filesystem::file_size(path, ec);
    if (ec)
        throw FormatError(path + ": cannot read: " + ec.message());
    if (size < kLengthBytes)
        throw FormatError(path + ": file is " + std::to_string(size) +
                          " bytes, shorter than the 8-byte header length");

    std::shared_ptr<Storage> storage = Storage::map_file(path);
    const std::span<const std::byte> bytes(storage->data(), storage->size());
    Layout layout = parse_layout(bytes, path);

    SafetensorsFile file;
    file.metadata = std::move(layout.metadata);
    file.outputs.values = std::move(layout.values);
    file.outputs.lengths = std::move(layout.lengths);
    for (Entry& e : layout.entries) {
        const std::size_t offset = layout.data_start + e.begin;
        const std::size_t nbytes = e.end - e.begin;
        Tensor tensor;
        if (nbytes == 0)
            tensor = Tensor::zeros(e.dtype, e.shape);
        else if (offset % dtype_size(e.dtype) == 0)
            tensor = Tensor::view(storage, e.dtype, e.shape, contiguous_strides(e.shape), offset);
        else // another writer's unaligned layout: copy rather than hand out misaligned pointers
            tensor = Tensor::from_bytes(e.dtype, e.shape, bytes.subspan(offset, nbytes));
        file.outputs.add(std::move(e.name), std::move(tensor));
    }
    return file;
}

SafetensorsFile parse_safetensors(std::span<const std::byte> bytes, const std::string& source_name) {
    Layout layout = parse_layout(bytes, source_name);
    SafetensorsFile file;
    file.metadata = std::move(layout.metadata);
    file.outputs.values = std::move(layout.values);
    file.outputs.lengths = std::move(layout.lengths);
    for (Entry& e : layout.entries) {
        const auto data = bytes.subspan(layout.data_start + e.begin, e.end - e.begin);
        file.outputs.add(std::move(e.name), Tensor::from_bytes(e.dtype, e.shape, data));
    }
    return file;
}

} // namespace pkbw
