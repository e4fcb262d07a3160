#include "locate.h"
#include "test_helpers.h"

#include <algorithm>
#include <gtest/gtest.h>

namespace fs = std::filesystem;
using namespace pkbw::cli;

TEST(Locate, SourceLayout) {
    auto layout = layout_at(PKBW_TEST_SOURCE_ROOT);
    ASSERT_TRUE(layout);
    EXPECT_FALSE(layout->installed);
    ASSERT_EQ(layout->include_dirs.size(), 3u);
    EXPECT_TRUE(fs::exists(layout->include_dirs[0] / "pkbw/solution.h"));
    EXPECT_TRUE(fs::exists(layout->include_dirs[0] / "pkbw/dtype_enum.h"));
    EXPECT_TRUE(fs::exists(layout->include_dirs[1] / "pkbw/core/dtype.h"));
    EXPECT_TRUE(fs::exists(layout->include_dirs[2] / "pkbw/toolkit/gemm.cuh"));
    // Every toolkit header is part of the compile cache key.
    int toolkit_headers = 0;
    for (const auto& header : layout->abi_headers)
        toolkit_headers += header.parent_path().filename() == "toolkit";
    EXPECT_GE(toolkit_headers, 8);
    EXPECT_EQ(layout->problem_dir("problems/2_allgather"), layout->root / "problems/2_allgather");
}

TEST(Locate, OrderEnvThenShareThenCompiledThenExeParent) {
    pkbw::test::TempDir dir;
    auto installed = dir.path() / "prefix";
    dir.write("prefix/share/pkbw/include/pkbw/solution.h", "//");
    dir.write("env/include/pkbw/solution.h", "//");
    fs::create_directories(installed / "bin");

    // $PKBW_DATA_DIR wins.
    auto found = locate_data(dir.path() / "env", installed / "bin", PKBW_TEST_SOURCE_ROOT);
    ASSERT_TRUE(found);
    EXPECT_TRUE(found->installed);
    EXPECT_EQ(found->root, fs::weakly_canonical(dir.path() / "env"));

    // Without it: <exe>/../share/pkbw.
    found = locate_data(std::nullopt, installed / "bin", PKBW_TEST_SOURCE_ROOT);
    ASSERT_TRUE(found);
    EXPECT_EQ(found->root, fs::weakly_canonical(installed / "share/pkbw"));
    EXPECT_EQ(found->include_dirs, std::vector<fs::path>{found->root / "include"});

    // An installed toolkit header is hashed too.
    dir.write("prefix/share/pkbw/include/pkbw/toolkit/gemm.cuh", "//");
    found = locate_data(std::nullopt, installed / "bin", PKBW_TEST_SOURCE_ROOT);
    ASSERT_TRUE(found);
    EXPECT_NE(std::find(found->abi_headers.begin(), found->abi_headers.end(),
                        found->root / "include/pkbw/toolkit/gemm.cuh"),
              found->abi_headers.end());

    // An env dir without the header is skipped.
    found = locate_data(dir.path() / "nothing", dir.path() / "elsewhere/bin", PKBW_TEST_SOURCE_ROOT);
    ASSERT_TRUE(found);
    EXPECT_EQ(found->root, fs::weakly_canonical(PKBW_TEST_SOURCE_ROOT));

    // Last resort: <exe>/../.. in the source layout (build/bin/pkbw in a source tree).
    dir.write("tree/abi/include/pkbw/solution.h", "//");
    fs::create_directories(dir.path() / "tree/build/bin");
    std::vector<fs::path> tried;
    found = locate_data(std::nullopt, dir.path() / "tree/build/bin", "", &tried);
    ASSERT_TRUE(found);
    EXPECT_FALSE(found->installed);
    EXPECT_EQ(found->root, fs::weakly_canonical(dir.path() / "tree"));
    EXPECT_EQ(tried.size(), 2u);

    tried.clear();
    EXPECT_FALSE(locate_data(std::nullopt, dir.path() / "x/y", "", &tried));
    EXPECT_EQ(tried.size(), 2u);
}
