// read_untrusted_file and list_untrusted_directory: what a candidate could leave in a folder it may
// write (links, FIFOs, hard links, sparse files, files that lie about their size) is refused with a
// reason naming the file, and nothing of a refused file is read.
#include "pkbw/core/untrusted_file.h"
#include "trace_test_util.h"

#include <chrono>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

namespace pkbw {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

const std::string kSecret = "secret-outside-the-folder-7d1f";

bool contains(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

long max_rss_mib() {
    rusage usage{};
    ::getrusage(RUSAGE_SELF, &usage);
    return usage.ru_maxrss / 1024;
}

TEST(UntrustedFile, ReadsARegularFileBelowTheBase) {
    TempDir dir;
    fs::create_directories(dir.path() / "candidate");
    dir.write("candidate/a.jsonl", "hello\n");
    const auto read = read_untrusted_file(dir.path(), "candidate/a.jsonl", 64);
    ASSERT_TRUE(read.ok()) << read.error;
    EXPECT_EQ(read.bytes, "hello\n");
    // Exactly at the cap is read; one byte over is not.
    EXPECT_TRUE(read_untrusted_file(dir.path(), "candidate/a.jsonl", 6).ok());
    const auto over = read_untrusted_file(dir.path(), "candidate/a.jsonl", 5);
    EXPECT_FALSE(over.ok());
    EXPECT_TRUE(contains(over.error, "candidate/a.jsonl: 6 bytes, over the cap of 5 bytes")) << over.error;
}

TEST(UntrustedFile, ALinkToAFileOutsideIsRefusedAndNothingOfItRead) {
    TempDir outside, dir;
    const fs::path target = outside.write("secret.txt", kSecret);
    fs::create_symlink(target, dir.path() / "rank_0.engine.jsonl");
    fs::create_symlink("../../etc/passwd", dir.path() / "relative.jsonl");
    const auto read = read_untrusted_file(dir.path(), "rank_0.engine.jsonl", 1 << 20);
    EXPECT_FALSE(read.ok());
    EXPECT_TRUE(read.bytes.empty());
    EXPECT_FALSE(contains(read.bytes + read.error, kSecret));
    EXPECT_TRUE(contains(read.error,
                         (dir.path() / "rank_0.engine.jsonl").string() + ": a symbolic link: not followed"))
        << read.error;
    EXPECT_TRUE(contains(read_untrusted_file(dir.path(), "relative.jsonl", 1 << 20).error, "symbolic link"));
}

TEST(UntrustedFile, ADirectoryOnThePathThatIsALinkIsNotFollowed) {
    TempDir outside, dir;
    outside.write("rank_0.engine.jsonl", kSecret);
    fs::create_symlink(outside.path(), dir.path() / "candidate");
    const auto read = read_untrusted_file(dir.path(), "candidate/rank_0.engine.jsonl", 1 << 20);
    EXPECT_FALSE(read.ok());
    EXPECT_TRUE(read.bytes.empty());
    EXPECT_TRUE(contains(read.error, (dir.path() / "candidate").string() + ": a symbolic link: not followed"))
        << read.error;
    const auto listing = list_untrusted_directory(
        dir.path(), "candidate", [](auto) { return true; }, 10);
    EXPECT_FALSE(listing.ok());
    EXPECT_FALSE(listing.missing);
    EXPECT_TRUE(listing.names.empty());
    EXPECT_TRUE(contains(listing.error, "symbolic link")) << listing.error;
}

TEST(UntrustedFile, PathsThatLeaveTheBaseAreRefused) {
    TempDir dir;
    fs::create_directories(dir.path() / "candidate");
    dir.write("config.json", kSecret);
    for (const char* path : {"candidate/../config.json", "/etc/passwd", "", "."}) {
        const auto read = read_untrusted_file(dir.path() / "candidate", path, 1 << 20);
        EXPECT_FALSE(read.ok()) << path;
        EXPECT_TRUE(read.bytes.empty()) << path;
        EXPECT_TRUE(contains(read.error, "not a path below")) << path << ": " << read.error;
    }
}

TEST(UntrustedFile, AFifoIsRefusedWithoutWaitingForAWriter) {
    TempDir dir;
    ASSERT_EQ(::mkfifo((dir.path() / "rank_0.cupti.jsonl").c_str(), 0600), 0);
    const auto start = std::chrono::steady_clock::now();
    const auto read = read_untrusted_file(dir.path(), "rank_0.cupti.jsonl", 1 << 20);
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
    EXPECT_FALSE(read.ok());
    EXPECT_TRUE(contains(read.error, "rank_0.cupti.jsonl: a FIFO, not a regular file")) << read.error;
    fs::create_directories(dir.path() / "sub");
    EXPECT_TRUE(contains(read_untrusted_file(dir.path(), "sub", 1 << 20).error, "a directory")) << "sub";
    EXPECT_TRUE(contains(read_untrusted_file(dir.path(), "missing", 1 << 20).error, "missing: no such file"));
}

TEST(UntrustedFile, AHardLinkToAFileElsewhereIsRefused) {
    TempDir dir;
    fs::create_directories(dir.path() / "outside");
    fs::create_directories(dir.path() / "candidate");
    const fs::path target = dir.write("outside/secret.txt", kSecret);
    fs::create_hard_link(target, dir.path() / "candidate" / "rank_0.engine.jsonl");
    const auto read = read_untrusted_file(dir.path(), "candidate/rank_0.engine.jsonl", 1 << 20);
    EXPECT_FALSE(read.ok());
    EXPECT_FALSE(contains(read.bytes, kSecret));
    EXPECT_TRUE(contains(read.error, "has 2 hard links")) << read.error;
}

// The file's size decides before a byte is read: a sparse gibibyte costs neither time nor memory.
TEST(UntrustedFile, ASparseGibibyteIsRefusedBySizeWithoutBeingRead) {
    TempDir dir;
    const fs::path path = dir.path() / "rank_0.cupti.jsonl";
    {
        const int fd = ::open(path.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
        ASSERT_GE(fd, 0);
        ASSERT_EQ(::ftruncate(fd, 1ll << 30), 0);
        ::close(fd);
    }
    const long rss_before = max_rss_mib();
    const auto start = std::chrono::steady_clock::now();
    const auto read = read_untrusted_file(dir.path(), "rank_0.cupti.jsonl", 256ull << 20);
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
    EXPECT_LT(max_rss_mib() - rss_before, 16);
    EXPECT_FALSE(read.ok());
    EXPECT_TRUE(read.bytes.empty());
    EXPECT_TRUE(contains(read.error, "rank_0.cupti.jsonl: 1073741824 bytes, over the cap of 268435456 bytes"))
        << read.error;
}

// /proc files say size 0 and yield more: the reader stops at the cap whatever the size said, as it
// would for a file that grows while it is read.
TEST(UntrustedFile, AFileYieldingMoreThanItsSizeSaidIsCutAtTheCapAndRefused) {
    struct stat st {};
    ASSERT_EQ(::stat("/proc/self/status", &st), 0);
    ASSERT_EQ(st.st_size, 0);
    const auto read = read_untrusted_file("/proc/self", "status", 16);
    EXPECT_FALSE(read.ok());
    EXPECT_TRUE(read.bytes.empty());
    EXPECT_TRUE(contains(read.error, "status: holds more than the cap of 16 bytes (its size said 0)"))
        << read.error;
    const auto whole = read_untrusted_file("/proc/self", "status", 1 << 20);
    ASSERT_TRUE(whole.ok()) << whole.error;
    EXPECT_TRUE(contains(whole.bytes, "Name:"));
}

TEST(UntrustedFile, ListingNamesWhatIsWantedUpToTheCapWithoutFollowingAnything) {
    TempDir dir, outside;
    outside.write("rank_9.engine.jsonl", kSecret);
    dir.write("rank_1.engine.jsonl", "x");
    dir.write("rank_0.engine.jsonl", "x");
    dir.write("notes.txt", "x");
    fs::create_symlink(outside.path(), dir.path() / "rank_2.engine.jsonl");
    const auto wanted = [](std::string_view name) { return name.starts_with("rank_"); };
    auto listing = list_untrusted_directory(dir.path(), "", wanted, 10);
    ASSERT_TRUE(listing.ok()) << listing.error;
    EXPECT_EQ(listing.names, (std::vector<std::string>{"rank_0.engine.jsonl", "rank_1.engine.jsonl",
                                                       "rank_2.engine.jsonl"}));
    EXPECT_EQ(listing.left_out, 0u);
    listing = list_untrusted_directory(dir.path(), "", wanted, 2);
    EXPECT_EQ(listing.names.size(), 2u);
    EXPECT_EQ(listing.left_out, 1u);
    listing = list_untrusted_directory(dir.path(), "candidate", wanted, 2);
    EXPECT_TRUE(listing.missing);
    EXPECT_FALSE(listing.ok());
}

} // namespace
} // namespace pkbw
