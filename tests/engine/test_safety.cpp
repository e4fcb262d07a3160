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

TEST(Multicast, PythonCommentsAndDocstringsAreNotCode) {
    // As PKB's historic 22_clip_grad_norm_ep_cuda.py: multicast named in the module docstring and in
    // comments, never used.
    const std::string mention = R"PY("""
All-reduce the scalar via symmetric memory + multimem.ld_reduce/st on bf16x2.
"""
import torch  # not multimem: plain NCCL

CUDA_SRC = r'''
// a multimem all-reduce would go here
/* cuMulticastCreate needs NVSwitch */
__global__ void add(float* x) { x[0] += 1.0f; }
'''


def solution(tensor):
    """Sums over ranks; the multicast_ptr path is gone."""
    x = 1  # hdl.multicast_ptr
    return tensor
)PY";
    EXPECT_FALSE(find_multicast_use(mention, SourceLanguage::Python));
    // Read as C++, the same text is refused (Python's comments and docstrings are not C's).
    EXPECT_TRUE(find_multicast_use(mention));
}

TEST(Multicast, PythonCodeAndItsCudaSourceAreCode) {
    // PTX inside the CUDA source handed to load_inline: a string, but code.
    const std::string ptx = R"PY("""Docstring."""
CUDA_SRC = """
__device__ void f(float* p) {
    asm volatile("multimem.ld_reduce.relaxed.sys.global.add.f32 %0, [%1];" : : );
}
"""
)PY";
    auto a = find_multicast_use(ptx, SourceLanguage::Python);
    ASSERT_TRUE(a);
    EXPECT_EQ(a->construct, "multimem");
    EXPECT_EQ(a->line, 4);
    // Python code: the symmetric-memory handle's multicast pointer, after a docstring on two lines.
    auto b =
        find_multicast_use("def solution(t):\n    \"\"\"Two\n    lines.\"\"\"\n    h = symm.rendezvous(t)\n"
                           "    return h.multicast_ptr  # multimem\n",
                           SourceLanguage::Python);
    ASSERT_TRUE(b);
    EXPECT_EQ(b->construct, "multicast_ptr");
    EXPECT_EQ(b->line, 5);
    // A string that is an argument or a value is not a docstring, even alone on its line.
    auto c =
        find_multicast_use("ext = load_inline(\n    \"x\",\n    \"multimem.st.global.f32 [%0], %1;\",\n)\n",
                           SourceLanguage::Python);
    ASSERT_TRUE(c);
    EXPECT_EQ(c->line, 3);
    EXPECT_TRUE(find_multicast_use("src = \\\n    'multimem.st'\n", SourceLanguage::Python));
    EXPECT_EQ(source_language("/x/1_allreduce_cuda.py"), SourceLanguage::Python);
    EXPECT_EQ(source_language("/x/1_allreduce_cuda.cu"), SourceLanguage::Cpp);
}

TEST(Multicast, CppRawStringsAreKept) {
    auto finding = find_multicast_use("const char* ptx = R\"(// not a comment in here\n"
                                      "multimem.st.global.f32 [%0], %1;)\";\n");
    ASSERT_TRUE(finding);
    EXPECT_EQ(finding->line, 2);
}

TEST(Multicast, RefusalSaysWhatTurnsItOffAndHowToRunIt) {
    const std::string source = "x = 1\nh = hdl.multicast_ptr\n";
    MulticastCheck check;
    check.backend = "cuda";
    // Off by this machine's environment.
    check.machine = {{"NCCL_NVLS_ENABLE", "0"}};
    std::string refusal = multicast_refusal("/s/1_allreduce_cuda.py", source, check);
    EXPECT_NE(refusal.find("/s/1_allreduce_cuda.py:2 uses NVLink multicast (multicast_ptr)"),
              std::string::npos)
        << refusal;
    EXPECT_NE(refusal.find("off on this machine: its environment sets NCCL_NVLS_ENABLE=0"), std::string::npos)
        << refusal;
    EXPECT_NE(refusal.find("--allow-multicast"), std::string::npos) << refusal;
    // Off only by what pkbw adds for a PKB run's ranks: said as pkbw's doing, not the machine's.
    check.machine = {};
    check.pkbw_adds = {
        {"NCCL_NVLS_ENABLE", "0"}, {"TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"}, {"NVSHMEM_DISABLE_NVLS", "1"}};
    refusal = multicast_refusal("/s/1_allreduce_cuda.py", source, check);
    EXPECT_NE(refusal.find("it sets NCCL_NVLS_ENABLE=0, TORCH_SYMM_MEM_DISABLE_MULTICAST=1 and "
                           "NVSHMEM_DISABLE_NVLS=1 for the ranks"),
              std::string::npos)
        << refusal;
    EXPECT_EQ(refusal.find("this machine's environment"), std::string::npos) << refusal;
    EXPECT_NE(refusal.find("--allow-multicast"), std::string::npos) << refusal;
    // The environment's own setting wins over pkbw's: multicast left on there, nothing refused.
    check.machine = {
        {"NCCL_NVLS_ENABLE", "1"}, {"TORCH_SYMM_MEM_DISABLE_MULTICAST", "0"}, {"NVSHMEM_DISABLE_NVLS", "0"}};
    EXPECT_EQ(multicast_refusal("/s/1_allreduce_cuda.py", source, check), "");
    // The one override, and the backend where multicast cannot matter.
    check.machine = {{"NCCL_NVLS_ENABLE", "0"}};
    check.allowed = true;
    EXPECT_EQ(multicast_refusal("/s/1_allreduce_cuda.py", source, check), "");
    check.allowed = false;
    check.backend = "host";
    EXPECT_EQ(multicast_refusal("/s/1_allreduce_cuda.py", source, check), "");
    // A mention in a comment only: nothing to refuse.
    check.backend = "cuda";
    EXPECT_EQ(multicast_refusal("/s/1_allreduce_cuda.py", "x = 1  # hdl.multicast_ptr\n", check), "");
}

TEST(Multicast, EnvironmentSwitches) {
    EXPECT_EQ(multicast_disabled_reason({}), "");
    EXPECT_EQ(multicast_disabled_reason({{"NCCL_NVLS_ENABLE", "1"}}), "");
    EXPECT_EQ(multicast_disabled_reason({{"NCCL_NVLS_ENABLE", "0"}}), "NCCL_NVLS_ENABLE=0");
    EXPECT_EQ(multicast_disabled_reason({{"TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"}}),
              "TORCH_SYMM_MEM_DISABLE_MULTICAST=1");
    EXPECT_EQ(multicast_disabled_reason({{"NVSHMEM_DISABLE_NVLS", "1"}}), "NVSHMEM_DISABLE_NVLS=1");
}

TEST(NcclDeviceApi, OnlyDeviceApiSourcesCanBeRefused) {
    // Host-API NCCL is compatible across 2.x: never refused, whatever versions this machine has.
    EXPECT_EQ(pkbw::cli::nccl_device_api_refusal("#include <nccl.h>\nncclAllReduce(...);"), "");
    // Device-API code is refused exactly when the compiled and loaded versions are both known and differ.
    const int compiled = pkbw::cli::nccl_compiled_version(), loaded = pkbw::cli::nccl_loaded_version();
    const std::string refusal = pkbw::cli::nccl_device_api_refusal("#include <nccl_device.h>\n");
    EXPECT_EQ(refusal.empty(), compiled == 0 || loaded == 0 || compiled == loaded) << refusal;
}
