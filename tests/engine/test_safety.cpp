#include "safety.h"
#include "version.h"

#include <gtest/gtest.h>

using namespace pkbw::cli;

TEST(Multicast, FindsPtxMultimemWithLine) {
    std::string source =
        "#include <cuda.h>\n"
        "// multimem in a comment does not count\n"
        "/* nor cuMulticastCreate\n   in a block */\n"
        "__device__ void f(float* p) {\n"
        "    asm volatile(\"multimem.ld_reduce.relaxed.sys.global.add.f32 %0, [%1];\" : : );\n"
        "}\n";
    auto finding = find_multicast_use(source);
    ASSERT_TRUE(finding);
    EXPECT_EQ(finding->construct, "multimem");
    EXPECT_EQ(finding->line, 6);
    EXPECT_EQ(finding->text.rfind("asm volatile", 0), 0u);
}

TEST(Multicast, FindsDriverApiAndSymmetricPointer) {
    auto a = find_multicast_use("int x;\nCUresult r = cuMulticastCreate(&handle, &prop);\n");
    ASSERT_TRUE(a);
    EXPECT_EQ(a->construct, "cuMulticast");
    EXPECT_EQ(a->line, 2);
    auto b = find_multicast_use("\n\n\nvoid* mc = mem.multicast_ptr;\n");
    ASSERT_TRUE(b);
    EXPECT_EQ(b->construct, "multicast_ptr");
    EXPECT_EQ(b->line, 4);
}

TEST(Multicast, CleanSourceAndCommentsOnly) {
    EXPECT_FALSE(find_multicast_use("int main() { return 0; } // multimem\n/* cuMulticastBindMem */\n"));
    EXPECT_FALSE(find_multicast_use("const char* s = \"http://x\"; int multi = 1; int mem = 2;\n"));
}

TEST(Multicast, EnvironmentSwitches) {
    EXPECT_EQ(multicast_disabled_reason({}), "");
    EXPECT_EQ(multicast_disabled_reason({{"NCCL_NVLS_ENABLE", "1"}}), "");
    EXPECT_EQ(multicast_disabled_reason({{"NCCL_NVLS_ENABLE", "0"}}), "NCCL_NVLS_ENABLE=0");
    EXPECT_EQ(multicast_disabled_reason({{"TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"}}),
              "TORCH_SYMM_MEM_DISABLE_MULTICAST=1");
}

TEST(NcclDeviceApi, OnlyDeviceApiSourcesCanBeRefused) {
    // Host-API NCCL is compatible across 2.x: never refused, whatever versions this machine has.
    EXPECT_EQ(pkbw::cli::nccl_device_api_refusal("#include <nccl.h>\nncclAllReduce(...);"), "");
    // Device-API code is refused exactly when the compiled and loaded versions are both known and differ.
    const int compiled = pkbw::cli::nccl_compiled_version(), loaded = pkbw::cli::nccl_loaded_version();
    const std::string refusal = pkbw::cli::nccl_device_api_refusal("#include <nccl_device.h>\n");
    EXPECT_EQ(refusal.empty(), compiled == 0 || loaded == 0 || compiled == loaded) << refusal;
}
