// Test support: builds torch.save-like zip archives (stored entries, correct CRC-32) around hand-made
// pickles, so that tests and the fuzz target reach the unpickler past the zip checks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace pkbw::test {

inline std::uint32_t zip_crc32(std::string_view data) {
    std::uint32_t c = 0xFFFFFFFFu;
    for (const unsigned char b : data) {
        c ^= b;
        for (int k = 0; k < 8; ++k) {
            c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        }
    }
    return c ^ 0xFFFFFFFFu;
}

struct ZipFileEntry {
    std::string name;
    std::string data;
    std::uint16_t method = 0; // 0 stored; anything else is only written to test refusal
};

// A zip archive of `entries`, laid out as torch.save does: local headers and data, the central
// directory, the end record.
inline std::vector<std::byte> make_zip(const std::vector<ZipFileEntry>& entries) {
    std::string out, central;
    auto put = [](std::string& s, std::uint64_t v, int width) {
        for (int i = 0; i < width; ++i) {
            s.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
        }
    };
    for (const auto& e : entries) {
        const std::uint64_t offset = out.size();
        const std::uint32_t crc = zip_crc32(e.data);
        put(out, 0x04034b50, 4);
        put(out, 20, 2);
        put(out, 0, 2);
        put(out, e.method, 2);
        put(out, 0, 4); // time, date
        put(out, crc, 4);
        put(out, e.data.size(), 4);
        put(out, e.data.size(), 4);
        put(out, e.name.size(), 2);
        put(out, 0, 2);
        out += e.name;
        out += e.data;

        put(central, 0x02014b50, 4);
        put(central, 20, 2);
        put(central, 20, 2);
        put(central, 0, 2);
        put(central, e.method, 2);
        put(central, 0, 4);
        put(central, crc, 4);
        put(central, e.data.size(), 4);
        put(central, e.data.size(), 4);
        put(central, e.name.size(), 2);
        put(central, 0, 2); // extra
        put(central, 0, 2); // comment
        put(central, 0, 2); // disk
        put(central, 0, 2); // internal attributes
        put(central, 0, 4); // external attributes
        put(central, offset, 4);
        central += e.name;
    }
    const std::uint64_t cd_offset = out.size();
    out += central;
    put(out, 0x06054b50, 4);
    put(out, 0, 2);
    put(out, 0, 2);
    put(out, entries.size(), 2);
    put(out, entries.size(), 2);
    put(out, central.size(), 4);
    put(out, cd_offset, 4);
    put(out, 0, 2);
    std::vector<std::byte> bytes(out.size());
    for (std::size_t i = 0; i < out.size(); ++i) {
        bytes[i] = static_cast<std::byte>(out[i]);
    }
    return bytes;
}

// An archive "archive/data.pkl" = `pickle` plus float storages "0" (16 elements of 0..15) and "1"
// (4 elements), as a torch.save file would hold them.
inline std::vector<std::byte> make_torch_archive(std::string pickle) {
    std::string s0, s1;
    for (int i = 0; i < 16; ++i) {
        const float v = static_cast<float>(i);
        s0.append(reinterpret_cast<const char*>(&v), sizeof v);
    }
    s1.assign(16, '\0');
    return make_zip({{"archive/data.pkl", std::move(pickle)},
                     {"archive/data/0", s0},
                     {"archive/data/1", s1},
                     {"archive/version", "3\n"}});
}

} // namespace pkbw::test
