// SHA-256 (FIPS 180-4), written here so that the engine has no runtime dependency on OpenSSL
// (docs/store.md "Solution hashes"). Used to fingerprint solution sources in the run store.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>

namespace pkbw {

class Sha256 {
public:
    using Digest = std::array<std::uint8_t, 32>;

    Sha256();
    void update(std::span<const std::byte> bytes);
    void update(std::string_view text);
    // Finishes the hash; the object is reset afterwards and can hash a new message.
    Digest final();
    std::string final_hex(); // 64 lowercase hex digits

private:
    void compress(const std::uint8_t* block);

    std::array<std::uint32_t, 8> state_;
    std::array<std::uint8_t, 64> buffer_{};
    std::size_t buffered_ = 0;
    std::uint64_t total_bytes_ = 0;
};

std::string sha256_hex(std::string_view data);
// Streams the file. Throws pkbw::Error naming the path if it cannot be read.
std::string sha256_file_hex(const std::filesystem::path& path);
std::string to_hex(std::span<const std::uint8_t> bytes);

} // namespace pkbw
