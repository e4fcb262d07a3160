#include "torch_pt_zip.h"

#include "pkbw/core/error.h"

#include <array>
#include <optional>
#include <set>

namespace pkbw::torch_pt {
namespace {

constexpr std::uint32_t kLocalSig = 0x04034b50;
constexpr std::uint32_t kCentralSig = 0x02014b50;
constexpr std::uint32_t kEndSig = 0x06054b50;
constexpr std::uint32_t kEnd64Sig = 0x06064b50;
constexpr std::uint32_t kEnd64LocatorSig = 0x07064b50;
constexpr std::size_t kEndSize = 22, kEnd64Size = 56, kLocatorSize = 20, kCentralSize = 46, kLocalSize = 30;

// Little-endian field reads at a position already checked to lie inside the buffer.
std::uint64_t read_le(std::span<const std::byte> bytes, std::uint64_t pos, int width) {
    std::uint64_t value = 0;
    for (int i = width - 1; i >= 0; --i) {
        value = (value << 8) | std::to_integer<std::uint64_t>(bytes[pos + static_cast<std::uint64_t>(i)]);
    }
    return value;
}

// Bounds-checked cursor over the archive.
class Reader {
public:
    Reader(std::span<const std::byte> bytes, const std::string& source)
        : bytes_(bytes)
        , source_(source) {}

    void need(std::uint64_t pos, std::uint64_t count, const std::string& what) const {
        if (pos > bytes_.size() || count > bytes_.size() - pos) {
            throw FormatError(source_ + ": zip " + what + " at offset " + std::to_string(pos) + " (" +
                              std::to_string(count) + " bytes) runs past the end of the " +
                              std::to_string(bytes_.size()) + "-byte file");
        }
    }
    std::uint64_t u16(std::uint64_t pos) const { return read_le(bytes_, pos, 2); }
    std::uint64_t u32(std::uint64_t pos) const { return read_le(bytes_, pos, 4); }
    std::uint64_t u64(std::uint64_t pos) const { return read_le(bytes_, pos, 8); }
    std::string text(std::uint64_t pos, std::uint64_t count) const {
        return std::string(reinterpret_cast<const char*>(bytes_.data() + pos), count);
    }
    std::uint64_t size() const { return bytes_.size(); }

private:
    std::span<const std::byte> bytes_;
    const std::string& source_;
};

const std::array<std::uint32_t, 256>& crc_table() {
    static const auto table = [] {
        std::array<std::uint32_t, 256> t{};
        for (std::uint32_t i = 0; i < 256; ++i) {
            std::uint32_t c = i;
            for (int k = 0; k < 8; ++k) {
                c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
            }
            t[i] = c;
        }
        return t;
    }();
    return table;
}

} // namespace

std::uint32_t crc32(std::span<const std::byte> bytes) {
    const auto& table = crc_table();
    std::uint32_t c = 0xFFFFFFFFu;
    for (const std::byte b : bytes) {
        c = table[(c ^ std::to_integer<std::uint32_t>(b)) & 0xFF] ^ (c >> 8);
    }
    return c ^ 0xFFFFFFFFu;
}

namespace {

// Where the central directory lies and how many entries it claims (the zip64 records' figures where
// they exist), checked against the archive.
struct CentralDirectory {
    std::uint64_t count = 0, offset = 0, size = 0;
};

CentralDirectory find_central_directory(const Reader& r, const std::string& source) {
    if (r.size() < kEndSize) {
        throw FormatError(source + ": " + std::to_string(r.size()) +
                          " bytes is too short for a zip archive (torch.save's format since PyTorch 1.6)");
    }
    // The end record sits in the last 22 + 65535 bytes (its comment is at most 65535 bytes).
    std::optional<std::uint64_t> end_pos;
    const std::uint64_t lowest = r.size() > kEndSize + 0xFFFF ? r.size() - kEndSize - 0xFFFF : 0;
    for (std::uint64_t pos = r.size() - kEndSize + 1; pos-- > lowest;) {
        if (r.u32(pos) == kEndSig && pos + kEndSize + r.u16(pos + 20) <= r.size()) {
            end_pos = pos;
            break;
        }
    }
    if (!end_pos) {
        throw FormatError(source + ": not a zip archive (no end-of-central-directory record); legacy "
                                   "(pre-1.6) torch.save files are not supported");
    }
    CentralDirectory cd{r.u16(*end_pos + 10), r.u32(*end_pos + 16), r.u32(*end_pos + 12)};
    if (r.u16(*end_pos + 4) != 0 || r.u16(*end_pos + 6) != 0) {
        throw FormatError(source + ": multi-disk zip archives are not supported");
    }
    std::uint64_t cd_limit = *end_pos; // the directory ends before the end records
    if (*end_pos >= kLocatorSize && r.u32(*end_pos - kLocatorSize) == kEnd64LocatorSig) {
        const std::uint64_t loc = *end_pos - kLocatorSize;
        const std::uint64_t end64 = r.u64(loc + 8);
        r.need(end64, kEnd64Size, "zip64 end-of-central-directory record");
        if (r.u32(end64) != kEnd64Sig || end64 + kEnd64Size > loc) {
            throw FormatError(source + ": zip64 end-of-central-directory record at offset " +
                              std::to_string(end64) + " is malformed");
        }
        cd = {r.u64(end64 + 32), r.u64(end64 + 48), r.u64(end64 + 40)};
        cd_limit = end64;
    }
    r.need(cd.offset, cd.size, "central directory");
    if (cd.offset + cd.size > cd_limit) {
        throw FormatError(source + ": zip central directory overlaps its end record");
    }
    if (cd.count > cd.size / kCentralSize) {
        throw FormatError(source + ": zip claims " + std::to_string(cd.count) + " entries in a " +
                          std::to_string(cd.size) + "-byte central directory");
    }
    return cd;
}

// The zip64 extra field of entry `name` (extra fields at [x, x_end)): the 64-bit values of the
// saturated fields, in this order.
void read_zip64_extra(const Reader& r, std::uint64_t x, std::uint64_t x_end, const std::string& name,
                      const std::string& source, std::uint64_t& size, std::uint64_t& compressed,
                      std::uint64_t& local) {
    while (x + 4 <= x_end) {
        const std::uint64_t id = r.u16(x), len = r.u16(x + 2);
        if (x + 4 + len > x_end) {
            throw FormatError(source + ": zip entry '" + name + "' has a malformed extra field");
        }
        if (id == 0x0001) {
            std::uint64_t f = x + 4;
            auto take = [&](std::uint64_t& field) {
                if (field != 0xFFFFFFFFu) {
                    return;
                }
                if (f + 8 > x + 4 + len) {
                    throw FormatError(source + ": zip entry '" + name + "' has a short zip64 field");
                }
                field = r.u64(f);
                f += 8;
            };
            take(size);
            take(compressed);
            take(local);
        }
        x += 4 + len;
    }
}

// Entry `index` of the central directory at `pos` (which moves past it): a stored, unencrypted entry
// whose local header names it and whose data lies inside the archive.
ZipEntry read_entry(const Reader& r, std::uint64_t& pos, std::uint64_t cd_end, std::uint64_t index,
                    const std::string& source) {
    const std::string where = "central directory entry " + std::to_string(index);
    if (pos + kCentralSize > cd_end || r.u32(pos) != kCentralSig) {
        throw FormatError(source + ": zip " + where + " is malformed");
    }
    const std::uint64_t flags = r.u16(pos + 8), method = r.u16(pos + 10);
    const std::uint64_t name_len = r.u16(pos + 28), extra_len = r.u16(pos + 30),
                        comment_len = r.u16(pos + 32);
    if (pos + kCentralSize + name_len + extra_len + comment_len > cd_end) {
        throw FormatError(source + ": zip " + where + " runs past the central directory");
    }
    ZipEntry e;
    e.name = r.text(pos + kCentralSize, name_len);
    e.crc32 = static_cast<std::uint32_t>(r.u32(pos + 16));
    std::uint64_t compressed = r.u32(pos + 20), size = r.u32(pos + 24), local = r.u32(pos + 42);
    const std::uint64_t x = pos + kCentralSize + name_len;
    read_zip64_extra(r, x, x + extra_len, e.name, source, size, compressed, local);
    if (flags & 0x1) {
        throw FormatError(source + ": zip entry '" + e.name + "' is encrypted");
    }
    if (method != 0) {
        throw FormatError(source + ": zip entry '" + e.name + "' is compressed (method " +
                          std::to_string(method) + "); only stored entries, as torch.save writes, are read");
    }
    if (compressed != size) {
        throw FormatError(source + ": zip entry '" + e.name + "' is stored but its sizes differ (" +
                          std::to_string(compressed) + " vs " + std::to_string(size) + ")");
    }
    r.need(local, kLocalSize, "local header of entry '" + e.name + "'");
    if (r.u32(local) != kLocalSig) {
        throw FormatError(source + ": zip entry '" + e.name + "' has no local header at offset " +
                          std::to_string(local));
    }
    const std::uint64_t local_name = r.u16(local + 26), local_extra = r.u16(local + 28);
    r.need(local + kLocalSize, local_name + local_extra, "local header of entry '" + e.name + "'");
    if (r.text(local + kLocalSize, local_name) != e.name) {
        throw FormatError(source + ": zip entry '" + e.name + "': local header names a different entry");
    }
    e.data_offset = local + kLocalSize + local_name + local_extra;
    e.size = size;
    r.need(e.data_offset, e.size, "data of entry '" + e.name + "'");
    pos += kCentralSize + name_len + extra_len + comment_len;
    return e;
}

} // namespace

ZipArchive::ZipArchive(std::span<const std::byte> bytes, std::string source)
    : bytes_(bytes)
    , source_(std::move(source)) {
    const Reader r(bytes_, source_);
    const CentralDirectory cd = find_central_directory(r, source_);
    std::set<std::string> seen;
    std::uint64_t pos = cd.offset;
    entries_.reserve(cd.count);
    for (std::uint64_t i = 0; i < cd.count; ++i) {
        ZipEntry e = read_entry(r, pos, cd.offset + cd.size, i, source_);
        if (!seen.insert(e.name).second) {
            throw FormatError(source_ + ": zip entry '" + e.name + "' appears twice");
        }
        entries_.push_back(std::move(e));
    }
    crc_checked_.assign(entries_.size(), false);
}

const ZipEntry* ZipArchive::find(const std::string& name) const {
    for (const auto& e : entries_) {
        if (e.name == name) {
            return &e;
        }
    }
    return nullptr;
}

std::span<const std::byte> ZipArchive::read(const ZipEntry& entry) const {
    const auto data = bytes_.subspan(entry.data_offset, entry.size);
    const auto index = static_cast<std::size_t>(&entry - entries_.data());
    if (index < crc_checked_.size() && !crc_checked_[index]) {
        const std::uint32_t actual = crc32(data);
        if (actual != entry.crc32) {
            throw FormatError(source_ + ": zip entry '" + entry.name + "' fails its CRC-32 check (stored " +
                              std::to_string(entry.crc32) + ", computed " + std::to_string(actual) + ")");
        }
        crc_checked_[index] = true;
    }
    return data;
}

} // namespace pkbw::torch_pt
