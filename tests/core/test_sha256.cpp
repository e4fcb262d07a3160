#include "pkbw/core/error.h"
#include "pkbw/core/sha256.h"

#include <fstream>
#include <gtest/gtest.h>
#include <string>
#include <unistd.h>

namespace {

// FIPS 180-4 examples (NIST CSRC "SHA256.pdf", "SHA2_Additional.pdf").
TEST(Sha256, NistVectors) {
    EXPECT_EQ(pkbw::sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    EXPECT_EQ(pkbw::sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    EXPECT_EQ(pkbw::sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
              "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    EXPECT_EQ(pkbw::sha256_hex(std::string(1000000, 'a')),
              "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

// Streaming in odd pieces must give the one-shot digest: exercises the partial-block buffer and the
// padding that spills into a second block (55, 56 and 64 byte tails).
TEST(Sha256, StreamingMatchesOneShot) {
    std::string message;
    for (int i = 0; i < 1000; ++i)
        message += static_cast<char>('a' + i % 26);
    for (std::size_t length : {55u, 56u, 63u, 64u, 65u, 119u, 120u, 1000u}) {
        std::string part = message.substr(0, length);
        pkbw::Sha256 hash;
        for (std::size_t i = 0; i < part.size(); i += 7)
            hash.update(std::string_view(part).substr(i, 7));
        EXPECT_EQ(hash.final_hex(), pkbw::sha256_hex(part)) << length;
    }
    // final() resets: the same object hashes a new message.
    pkbw::Sha256 hash;
    hash.update("garbage");
    hash.final();
    hash.update("abc");
    EXPECT_EQ(hash.final_hex(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Sha256, FileAndMissingFile) {
    auto path = std::filesystem::temp_directory_path() / ("pkbw_sha_" + std::to_string(::getpid()) + ".txt");
    {
        std::ofstream file(path, std::ios::binary);
        file << "abc";
    }
    EXPECT_EQ(pkbw::sha256_file_hex(path),
              "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    std::filesystem::remove(path);
    try {
        pkbw::sha256_file_hex(path);
        FAIL() << "no error for a missing file";
    } catch (const pkbw::Error& error) {
        EXPECT_NE(std::string(error.what()).find(path.string()), std::string::npos);
    }
}

} // namespace
