// Which launches touch peer memory, without a GPU: kernel signatures from names nvcc emits, and the
// parameter arrays a launch passes.
#include "peer_params.h"

#include <gtest/gtest.h>

namespace pkbw::tracer {
namespace {

TEST(PeerParams, PointerParametersComeFromTheKernelsMangledSignature) {
    // Names as nvcc 13 emits them (nvcc -cubin, then strings): an LLM-style push kernel in an
    // anonymous namespace, push(float const*, float* const*, int, double) ...
    EXPECT_EQ(pointer_parameters("_ZN32_GLOBAL__N__a4a9a764_4_m_cu_cker4pushEPKfPKPfid"),
              (std::vector<bool>{true, true, false, false}));
    // ... a template taking a struct by value and a function pointer: tk<float, 4>(float*, S,
    // void (*)(int), float const**) ...
    EXPECT_EQ(pointer_parameters("_Z2tkIfLi4EEvPT_1SPFviEPPKS0_"),
              (std::vector<bool>{true, false, false, true}));
    EXPECT_EQ(pointer_parameters("_Z6add_f2PfPKfi"), (std::vector<bool>{true, true, false}));
    EXPECT_EQ(pointer_parameters("_Z5emptyv"), std::vector<bool>{});
    // ... and what carries no signature.
    EXPECT_EQ(pointer_parameters("cker"), std::nullopt);
    EXPECT_EQ(pointer_parameters("ncclDevKernel_AllReduce_Sum_f32_RING_LL"), std::nullopt);
    EXPECT_EQ(pointer_parameters("_Zgarbage"), std::nullopt);
    // An expression template argument prints its '>' inside parentheses ("k<4>(S<((4)>(1))>*,
    // X<int, int, int>*)"): the brackets do not balance, so the count is unknown, never three.
    EXPECT_EQ(pointer_parameters("_Z1kILi4EEvP1SIXgtT_Li1EEEP1XIiiiE"), std::nullopt);
    EXPECT_EQ(pointer_parameters(""), std::nullopt);
}

TEST(PeerParams, ALaunchTouchesPeerMemoryWhenAPointerParameterLiesInAPeersRange) {
    PeerRanges peers;
    EXPECT_TRUE(peers.empty());
    peers.add(0x10000, 0x1000); // a peer's buffer
    peers.add(0x40000, 64);     // the device table of the peers' addresses
    peers.add(0x90000, 0);      // nothing
    EXPECT_FALSE(peers.empty());
    EXPECT_TRUE(peers.contains(0x10000));
    EXPECT_TRUE(peers.contains(0x10fff));
    EXPECT_FALSE(peers.contains(0x11000));
    EXPECT_FALSE(peers.contains(0xffff));
    EXPECT_TRUE(peers.contains(0x40020));
    EXPECT_FALSE(peers.contains(0x90000));

    void* own = reinterpret_cast<void*>(0x20000);
    void* into_peer = reinterpret_cast<void*>(0x10800);
    void* table = reinterpret_cast<void*>(0x40000);
    int n = 0x10800; // an integer that happens to look like a peer address: never read as one
    double scale = 0;
    // push(const float* in, float* const* peers, int n, double scale)
    const std::vector<bool> push = {true, true, false, false};
    void* with_table[] = {&own, &table, &n, &scale};
    EXPECT_TRUE(launch_touches_peer_memory(push, with_table, peers));
    void* local_only[] = {&own, &own, &n, &scale};
    EXPECT_FALSE(launch_touches_peer_memory(push, local_only, peers)) << "the int is not a pointer";
    void* direct[] = {&into_peer, &own, &n, &scale};
    EXPECT_TRUE(launch_touches_peer_memory(push, direct, peers));
    EXPECT_FALSE(launch_touches_peer_memory(push, nullptr, peers));
    EXPECT_FALSE(launch_touches_peer_memory(push, direct, PeerRanges{}));
}

} // namespace
} // namespace pkbw::tracer
