// GPU check of the toolkit's device code for problems 32 and 40-47 against PyTorch, stage by stage, bit for
// bit (issue 29): reads the stages tools/gpu/torch_stages.py wrote (each stage's inputs, which are PyTorch's
// outputs of the stage before, and PyTorch's output), runs the toolkit's code for that stage on the same
// inputs and counts the output elements whose bits differ:
//   gemm      tk::gemm (gemm.cuh: cuBLASLt bias epilogue or cuBLAS as PyTorch calls them); for a GEMM
//             feeding a ReLU also how many outputs change sign (ReLU-mask flips); each result also against
//             the exact sum rounded once, and with a bias also the bias-in-C beta-1 GEMM (the toolkit's
//             path before, and torch's fallback), which the CPU models of issue 29 suspect of rounding
//             twice
//   add       moe_mlp.cuh's add_in_place (torch's + of two bf16 tensors)
//   silu_mul  moe_mlp.cuh's silu_times (F.silu stored in bf16, times up, stored)
//   router    moe_router.cuh's softmax_top_k (softmax in PyTorch's order, rounded, top-k): the weights
// A differing GEMM means cuBLAS ran another kernel for the toolkit than for PyTorch; a differing
// elementwise stage means the toolkit rounds or orders an op otherwise. Prints one line per stage and
// "RESULT torch_stages: N stages, F differ". Usage: torch_stage_check CASE_DIR
#include "pkbw/solution.h"
#include "pkbw/toolkit/gemm.cuh"
#include "pkbw/toolkit/moe_mlp.cuh"
#include "pkbw/toolkit/moe_router.cuh"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace tk = pkbw::tk;
using Bits = std::vector<unsigned short>;

struct Harness {
    std::string failure;
};
int svc_fail(const pkbw::Context* ctx, const char* message) {
    static_cast<Harness*>(ctx->engine)->failure = message;
    return 1;
}

Bits read_bits(const std::string& path, std::size_t count) {
    Bits v(count);
    std::ifstream in(path, std::ios::binary);
    in.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(count * 2));
    return in ? v : Bits{};
}
float value(unsigned short bits) {
    const unsigned int word = static_cast<unsigned int>(bits) << 16;
    float f;
    std::memcpy(&f, &word, 4);
    return f;
}
// Device copies freed at scope end (RAII).
struct DeviceBits {
    void* ptr = nullptr;
    explicit DeviceBits(const Bits& v) {
        cudaMalloc(&ptr, v.size() * 2 + 2);
        cudaMemcpy(ptr, v.data(), v.size() * 2, cudaMemcpyHostToDevice);
    }
    explicit DeviceBits(std::size_t count) { cudaMalloc(&ptr, count * 2 + 2); }
    ~DeviceBits() { cudaFree(ptr); }
    DeviceBits(const DeviceBits&) = delete;
    DeviceBits& operator=(const DeviceBits&) = delete;
    Bits fetch(std::size_t count) const {
        Bits v(count);
        cudaDeviceSynchronize();
        cudaMemcpy(v.data(), ptr, count * 2, cudaMemcpyDeviceToHost);
        return v;
    }
};

// float -> bf16 bits, round to nearest even (finite values).
unsigned short to_bits(float f) {
    unsigned int u;
    std::memcpy(&u, &f, 4);
    u += 0x7fffu + ((u >> 16) & 1u);
    return static_cast<unsigned short>(u >> 16);
}

// The GEMM computed exactly on the host (double; bf16 products and sums of up to 2^20 terms are exact
// to far below a bf16 ulp) and rounded once, to see how far PyTorch's and the toolkit's fp32 sums are
// from the correctly rounded result: an IEEE fp32 summation in any order changes it in about 1 of 10^4
// elements at these sizes (CPU model, docs/problems.md); many more mean a lower-precision accumulation.
Bits exact_gemm(const Bits& a, const Bits& b, const Bits& bias, long long m, long long n, long long k,
                bool ta, bool tb) {
    Bits c(static_cast<std::size_t>(m * n));
    std::vector<double> row(static_cast<std::size_t>(k)), cols(static_cast<std::size_t>(n * k)); // op(B)ᵀ
    for (long long j = 0; j < n; ++j)
        for (long long p = 0; p < k; ++p)
            cols[j * k + p] = value(tb ? b[j * k + p] : b[p * n + j]);
    for (long long i = 0; i < m; ++i) {
        for (long long p = 0; p < k; ++p)
            row[p] = value(ta ? a[p * m + i] : a[i * k + p]);
        for (long long j = 0; j < n; ++j) {
            double sum = bias.empty() ? 0.0 : value(bias[j]);
            const double* col = &cols[j * k];
            for (long long p = 0; p < k; ++p)
                sum += row[p] * col[p];
            c[i * n + j] = to_bits(static_cast<float>(sum));
        }
    }
    return c;
}

long long count_differ(const Bits& x, const Bits& y) {
    long long d = 0;
    for (std::size_t i = 0; i < x.size(); ++i)
        d += x[i] != y[i] ? 1 : 0;
    return d;
}

// Prints the comparison of `got` with `want` ([rows, cols]); returns true when they differ.
bool report(const std::string& name, const Bits& got, const Bits& want, long long cols, bool signs) {
    long long differ = 0, first = -1, flips = 0;
    double max_abs = 0;
    for (std::size_t i = 0; i < want.size(); ++i) {
        if (got[i] == want[i])
            continue;
        first = first < 0 ? static_cast<long long>(i) : first;
        ++differ;
        max_abs = std::fmax(max_abs, std::fabs(value(got[i]) - value(want[i])));
        flips += (value(got[i]) > 0.f) != (value(want[i]) > 0.f) ? 1 : 0;
    }
    std::printf("%-22s %lld of %zu differ", name.c_str(), differ, want.size());
    if (differ)
        std::printf(" (max abs %.3g, first at [%lld, %lld])", max_abs, first / cols, first % cols);
    if (signs)
        std::printf(", %lld change sign (ReLU-mask flips)", flips);
    std::printf("\n");
    return differ != 0;
}

int run_gemm(const pkbw::Context& ctx, const std::string& dir, std::istringstream& in, std::string& name) {
    long long m, n, k;
    int ta, tb, bias;
    in >> name >> m >> n >> k >> ta >> tb >> bias;
    const std::string base = dir + "/" + name;
    const Bits a = read_bits(base + ".a", m * k), b = read_bits(base + ".b", k * n),
               want = read_bits(base + ".c", m * n);
    const Bits bias_bits = bias ? read_bits(base + ".bias", n) : Bits{};
    if (a.empty() || b.empty() || want.empty() || (bias && bias_bits.empty()))
        return -1;
    DeviceBits da(a), db(b), dbias(bias ? bias_bits : Bits(1)), dc(static_cast<std::size_t>(m * n));
    tk::Gemm g;
    g.dtype = pkbw::DType::BF16;
    g.m = m, g.n = n, g.k = k;
    g.a = da.ptr, g.trans_a = ta != 0, g.b = db.ptr, g.trans_b = tb != 0, g.c = dc.ptr;
    g.bias = bias ? dbias.ptr : nullptr;
    if (tk::gemm(ctx, g) != 0)
        return -1;
    const bool feeds_relu = name.size() > 4 && name.compare(name.size() - 4, 4, "_fc1") == 0;
    const Bits got = dc.fetch(want.size());
    const bool differ = report(name + (bias ? " (gemm+bias)" : " (gemm)"), got, want, n, feeds_relu);
    const Bits exact = exact_gemm(a, b, bias_bits, m, n, k, ta != 0, tb != 0);
    std::printf("%-22s   against the exact sum rounded once: PyTorch %lld, toolkit %lld differ\n", "",
                count_differ(want, exact), count_differ(got, exact));
    if (bias) { // the toolkit's path before the Lt epilogue: the bias copied into C, a beta-1 GEMM
        Bits filled(static_cast<std::size_t>(m * n));
        for (long long i = 0; i < m * n; ++i)
            filled[i] = bias_bits[i % n];
        DeviceBits dfilled(filled);
        g.bias = nullptr;
        g.beta = 1.0;
        g.c = dfilled.ptr;
        if (tk::gemm(ctx, g) == 0) {
            const Bits old_path = dfilled.fetch(want.size());
            std::printf(
                "%-22s   bias in C, beta 1 (torch's fallback): %lld differ from PyTorch, %lld from exact\n",
                "", count_differ(old_path, want), count_differ(old_path, exact));
        }
    }
    return differ;
}

int run_elementwise(const pkbw::Context& ctx, const std::string& kind, const std::string& dir,
                    std::istringstream& in, std::string& name) {
    long long count;
    in >> name >> count;
    const std::string base = dir + "/" + name;
    const Bits a = read_bits(base + ".a", count), b = read_bits(base + ".b", count),
               want = read_bits(base + ".c", count);
    if (a.empty() || b.empty() || want.empty())
        return -1;
    DeviceBits da(a), db(b);
    auto* x = static_cast<__nv_bfloat16*>(da.ptr);
    const auto* y = static_cast<const __nv_bfloat16*>(db.ptr);
    if (kind == "add")
        tk::moe_mlp_detail::add_in_place<<<tk::grid_for(count), 256, 0, ctx.stream()>>>(x, y, count);
    else
        tk::moe_mlp_detail::silu_times<<<tk::grid_for(count), 256, 0, ctx.stream()>>>(x, y, count);
    if (tk::finish(ctx) != 0)
        return -1;
    return report(name + " (" + kind + ")", da.fetch(want.size()), want, count, false);
}

int run_router(const pkbw::Context& ctx, const std::string& dir, std::istringstream& in, std::string& name) {
    long long tokens;
    int experts, k;
    in >> name >> tokens >> experts >> k;
    const std::string base = dir + "/" + name;
    const Bits logits = read_bits(base + ".a", tokens * experts), want = read_bits(base + ".c", tokens * k);
    if (logits.empty() || want.empty())
        return -1;
    DeviceBits dl(logits), dw(static_cast<std::size_t>(tokens * k));
    long long* selected = nullptr;
    cudaMalloc(&selected, static_cast<std::size_t>(tokens * k) * sizeof(long long));
    tk::moe_router_detail::softmax_top_k<__nv_bfloat16><<<tk::grid_for(tokens, 128), 128, 0, ctx.stream()>>>(
        static_cast<const __nv_bfloat16*>(dl.ptr), tokens, experts, k, static_cast<__nv_bfloat16*>(dw.ptr),
        selected);
    const int rc = tk::finish(ctx);
    const Bits got = dw.fetch(want.size());
    cudaFree(selected);
    return rc != 0 ? -1 : report(name + " (router)", got, want, k, false);
}

} // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: torch_stage_check CASE_DIR\n");
        return 2;
    }
    const std::string dir = argv[1];
    Harness harness;
    cudaStream_t stream = nullptr;
    cudaStreamCreate(&stream);
    pkbw::Services services{};
    services.fail = svc_fail;
    pkbw::Context ctx{};
    ctx.abi_version = pkbw::kAbiVersion;
    ctx.world_size = 1;
    ctx.stream_handle = stream;
    ctx.services = &services;
    ctx.engine = &harness;
    std::ifstream list(dir + "/cases.txt");
    std::string line;
    int stages = 0, failed = 0;
    while (std::getline(list, line)) {
        std::istringstream in(line);
        std::string kind, name;
        in >> kind;
        int rc = -1;
        if (kind == "gemm")
            rc = run_gemm(ctx, dir, in, name);
        else if (kind == "add" || kind == "silu_mul")
            rc = run_elementwise(ctx, kind, dir, in, name);
        else if (kind == "router")
            rc = run_router(ctx, dir, in, name);
        else
            continue;
        ++stages;
        if (rc < 0)
            std::printf("%-22s could not run: %s\n", name.c_str(),
                        harness.failure.empty() ? "missing or short stage files" : harness.failure.c_str());
        failed += rc != 0 ? 1 : 0;
    }
    std::printf("RESULT torch_stages: %d stages, %d differ\n", stages, failed);
    return stages > 0 && failed == 0 ? 0 : 1;
}
