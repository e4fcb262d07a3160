// SHA-256 as specified in FIPS 180-4 §6.2. Big-endian message schedule and length, 64-byte blocks.
#include "pkbw/core/sha256.h"

#include "pkbw/core/error.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <fstream>

namespace pkbw {

namespace {

constexpr std::array<std::uint32_t, 64> kRound{
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

constexpr std::array<std::uint32_t, 8> kInitial{0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                                0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};

} // namespace

Sha256::Sha256()
    : state_(kInitial) {}

void Sha256::compress(const std::uint8_t* block) {
    std::array<std::uint32_t, 64> w;
    for (int i = 0; i < 16; ++i)
        w[i] = std::uint32_t(block[4 * i]) << 24 | std::uint32_t(block[4 * i + 1]) << 16 |
               std::uint32_t(block[4 * i + 2]) << 8 | std::uint32_t(block[4 * i + 3]);
    for (int i = 16; i < 64; ++i) {
        std::uint32_t s0 = std::rotr(w[i - 15], 7) ^ std::rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
        std::uint32_t s1 = std::rotr(w[i - 2], 17) ^ std::rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    auto [a, b, c, d, e, f, g, h] = state_;
    for (int i = 0; i < 64; ++i) {
        std::uint32_t t1 = h + (std::rotr(e, 6) ^ std::rotr(e, 11) ^ std::rotr(e, 25)) +
                           ((e & f) ^ (~e & g)) + kRound[i] + w[i];
        std::uint32_t t2 =
            (std::rotr(a, 2) ^ std::rotr(a, 13) ^ std::rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
        h = g;
        g = f;
        f = e;
        e = d + t1;
        d = c;
        c = b;
        b = a;
        a = t1 + t2;
    }
    std::array<std::uint32_t, 8> add{a, b, c, d, e, f, g, h};
    for (int i = 0; i < 8; ++i)
        state_[i] += add[i];
}

void Sha256::update(std::span<const std::byte> bytes) {
    const auto* data = reinterpret_cast<const std::uint8_t*>(bytes.data());
    std::size_t size = bytes.size();
    total_bytes_ += size;
    if (buffered_ > 0) {
        std::size_t take = std::min(size, buffer_.size() - buffered_);
        std::memcpy(buffer_.data() + buffered_, data, take);
        buffered_ += take;
        data += take;
        size -= take;
        if (buffered_ < buffer_.size())
            return;
        compress(buffer_.data());
        buffered_ = 0;
    }
    for (; size >= 64; data += 64, size -= 64)
        compress(data);
    std::memcpy(buffer_.data(), data, size);
    buffered_ = size;
}

void Sha256::update(std::string_view text) {
    update(std::as_bytes(std::span(text.data(), text.size())));
}

Sha256::Digest Sha256::final() {
    std::uint64_t bit_length = total_bytes_ * 8;
    // Padding: 0x80, zeros up to 56 mod 64, then the bit length big-endian.
    std::array<std::uint8_t, 72> pad{};
    pad[0] = 0x80;
    std::size_t pad_size = (buffered_ < 56 ? 56 : 120) - buffered_;
    for (int i = 0; i < 8; ++i)
        pad[pad_size + i] = static_cast<std::uint8_t>(bit_length >> (56 - 8 * i));
    update(std::as_bytes(std::span(pad.data(), pad_size + 8)));
    Digest digest;
    for (int i = 0; i < 8; ++i)
        for (int b = 0; b < 4; ++b)
            digest[4 * i + b] = static_cast<std::uint8_t>(state_[i] >> (24 - 8 * b));
    *this = Sha256();
    return digest;
}

std::string Sha256::final_hex() {
    return to_hex(final());
}

std::string to_hex(std::span<const std::uint8_t> bytes) {
    constexpr char kDigits[] = "0123456789abcdef";
    std::string text;
    text.reserve(bytes.size() * 2);
    for (std::uint8_t byte : bytes) {
        text += kDigits[byte >> 4];
        text += kDigits[byte & 0xf];
    }
    return text;
}

std::string sha256_hex(std::string_view data) {
    Sha256 hash;
    hash.update(data);
    return hash.final_hex();
}

std::string sha256_file_hex(const std::filesystem::path& path) {
    std::ifstream file(path, std::ios::binary);
    if (!file)
        throw Error("cannot read " + path.string() + " to hash it");
    Sha256 hash;
    std::array<char, 1 << 16> chunk;
    while (file) {
        file.read(chunk.data(), chunk.size());
        hash.update(std::string_view(chunk.data(), static_cast<std::size_t>(file.gcount())));
    }
    if (file.bad())
        throw Error("error reading " + path.string() + " while hashing it");
    return hash.final_hex();
}

} // namespace pkbw
