// Minimal reader of the zip container torch.save writes (PyTorch >= 1.6): stored (uncompressed)
// entries, zip64 when sizes or offsets need it. Internal to core (torch_pt.cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace pkbw::torch_pt {

struct ZipEntry {
    std::string name;
    std::uint64_t data_offset = 0; // of the entry's bytes within the archive
    std::uint64_t size = 0;
    std::uint32_t crc32 = 0;
};

class ZipArchive {
public:
    // Reads the central directory of `bytes` (which must outlive the archive). Every offset and size
    // is checked against the archive's size; errors are pkbw::FormatError naming `source` and the entry.
    ZipArchive(std::span<const std::byte> bytes, std::string source);

    const std::vector<ZipEntry>& entries() const { return entries_; }
    const ZipEntry* find(const std::string& name) const;
    // The bytes of `entry`, after checking its CRC-32 (once per entry and archive).
    std::span<const std::byte> read(const ZipEntry& entry) const;
    const std::string& source() const { return source_; }

private:
    std::span<const std::byte> bytes_;
    std::string source_;
    std::vector<ZipEntry> entries_;
    mutable std::vector<bool> crc_checked_;
};

std::uint32_t crc32(std::span<const std::byte> bytes);

} // namespace pkbw::torch_pt
