// GPU check of the toolkit's MoE dispatch/combine (toolkit/include/pkbw/toolkit/moe_permute.cuh)
// against its host twins (moe_permute_host.h): every device function on random inputs at awkward
// sizes (one token, several scan and compaction tiles, few and many contributions per token, tokens
// with none, -0.0 and NaN in float maps, repeated experts), results compared bit for bit. The
// device combine computes in fp32 and rounds to D after each op; for bf16/f16/f32 that is the
// correctly rounded result the host twin computes in double (fp32 has more than 2p+2 bits), so any
// difference is a bug. Built and run by tools/gpu/moe_permute.sh; prints one line per case and
// "RESULT moe_permute: N cases, F failed".
#include "pkbw/solution.h"
#include "pkbw/toolkit/moe_permute.cuh"
#include "pkbw/toolkit/moe_permute_host.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace {

namespace tk = pkbw::tk;
using pkbw::DType;

// The services the toolkit calls: scratch (grown by name), fail (recorded). Nothing else is used.
struct Harness {
    std::map<std::string, std::pair<void*, std::size_t>> scratch;
    std::string failure;
    cudaStream_t stream = nullptr;
};
Harness* harness_of(const pkbw::Context* ctx) {
    return static_cast<Harness*>(ctx->engine);
}
void* svc_scratch(const pkbw::Context* ctx, const char* name, std::size_t bytes) {
    auto& slot = harness_of(ctx)->scratch[name];
    if (slot.first == nullptr || slot.second < bytes) {
        cudaStreamSynchronize(harness_of(ctx)->stream);
        cudaFree(slot.first);
        cudaMalloc(&slot.first, bytes ? bytes : 1);
        slot.second = bytes;
    }
    return slot.first;
}
int svc_fail(const pkbw::Context* ctx, const char* message) {
    harness_of(ctx)->failure = message;
    return 1;
}
double svc_param(const pkbw::Context*, const char*, double fallback) {
    return fallback;
}

template <class T>
T* to_device(const std::vector<T>& v) {
    T* d = nullptr;
    cudaMalloc(&d, v.size() * sizeof(T) + 1);
    cudaMemcpy(d, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice);
    return d;
}
template <class T>
std::vector<T> to_host(const T* d, std::size_t count) {
    std::vector<T> v(count);
    cudaMemcpy(v.data(), d, count * sizeof(T), cudaMemcpyDeviceToHost);
    return v;
}

// Values of a D tensor as bytes, and back to double, through core's conversions.
std::vector<unsigned char> encode(DType dtype, const std::vector<double>& values) {
    const std::size_t size = pkbw::element_size(dtype);
    std::vector<unsigned char> bytes(values.size() * size);
    for (std::size_t i = 0; i < values.size(); ++i)
        pkbw::f64_to_element(dtype, values[i], reinterpret_cast<std::byte*>(bytes.data() + i * size));
    return bytes;
}
std::vector<double> decode(DType dtype, const std::vector<unsigned char>& bytes) {
    return tk::to_f64(bytes.data(), dtype,
                      static_cast<std::int64_t>(bytes.size() / pkbw::element_size(dtype)));
}

int cases = 0, failed = 0;
void report(const std::string& what, bool ok, const std::string& detail = "") {
    ++cases;
    failed += ok ? 0 : 1;
    std::printf("%s %s%s%s\n", ok ? "ok  " : "FAIL", what.c_str(), detail.empty() ? "" : ": ",
                detail.c_str());
}

bool bits_equal(const std::vector<double>& a, const std::vector<double>& b, std::string& where) {
    if (a.size() != b.size()) {
        where = "sizes " + std::to_string(a.size()) + " vs " + std::to_string(b.size());
        return false;
    }
    for (std::size_t i = 0; i < a.size(); ++i)
        if (std::memcmp(&a[i], &b[i], sizeof(double)) != 0 && !(std::isnan(a[i]) && std::isnan(b[i]))) {
            where = "first at " + std::to_string(i) + ": device " + std::to_string(a[i]) + " host " +
                    std::to_string(b[i]);
            return false;
        }
    return true;
}

void check_permutation(const pkbw::Context& ctx, std::mt19937_64& gen, long long experts, long long tokens,
                       DType map_dtype, double density) {
    std::bernoulli_distribution routed(density);
    std::uniform_int_distribution<int> odd(0, 9);
    std::vector<double> map(static_cast<std::size_t>(experts * tokens));
    for (double& v : map) {
        v = routed(gen) ? 1.0 : 0.0;
        if (map_dtype == DType::F32 && odd(gen) == 0)
            v = v != 0.0 ? std::nan("") : -0.0; // NaN is routed, -0.0 is not
    }
    const std::vector<unsigned char> bytes = encode(map_dtype, map);
    auto* d_map = to_device(bytes);
    const long long capacity = experts * tokens;
    auto* d_sorted = static_cast<long long*>(nullptr);
    int* d_experts = nullptr;
    cudaMalloc(&d_sorted, sizeof(long long) * (capacity + 1));
    cudaMalloc(&d_experts, sizeof(int) * (capacity + 1));
    std::vector<long long> counts;
    const int rc = tk::expert_major_permutation(ctx, d_map, map_dtype, experts, tokens, d_sorted, d_experts,
                                                capacity, counts);
    const tk::ExpertMajorPermutation host =
        tk::expert_major_permutation_host(decode(map_dtype, bytes), experts, tokens);
    const std::string what = "expert_major_permutation E=" + std::to_string(experts) +
                             " T=" + std::to_string(tokens) + " " + std::string(pkbw::dtype_name(map_dtype));
    bool ok = rc == 0 && counts == host.counts;
    if (ok) {
        ok = to_host(d_sorted, host.sorted_indices.size()) == host.sorted_indices &&
             to_host(d_experts, host.row_experts.size()) == host.row_experts;
    }
    report(what, ok, rc ? harness_of(&ctx)->failure : "");
    // Capacity one short of the routed rows must fail, not write past it.
    if (host.rows() > 0) {
        const int short_rc = tk::expert_major_permutation(ctx, d_map, map_dtype, experts, tokens, d_sorted,
                                                          nullptr, host.rows() - 1, counts);
        report(what + " capacity refusal", short_rc != 0);
    }
    cudaFree(d_map);
    cudaFree(d_sorted);
    cudaFree(d_experts);
}

void check_sort_chunks(const pkbw::Context& ctx, std::mt19937_64& gen, int experts, int ranks, long long n) {
    std::uniform_int_distribution<long long> size(0, 40);
    std::vector<long long> counts(static_cast<std::size_t>(experts));
    long long rows = 0;
    for (long long& c : counts) {
        c = size(gen);
        rows += c;
    }
    std::vector<double> values(static_cast<std::size_t>(rows * n));
    for (std::size_t i = 0; i < values.size(); ++i)
        values[i] = static_cast<double>(i);
    const std::vector<unsigned char> bytes = encode(DType::F32, values);
    const std::size_t row_bytes = static_cast<std::size_t>(n) * 4;
    for (int direction = 0; direction < 2; ++direction) {
        std::vector<tk::ChunkCopy> plan;
        const std::string why =
            direction == 0
                ? tk::sort_chunks_plan(counts, tk::local_expert_major_order(experts, ranks), rows, plan)
                : tk::sort_chunks_plan(tk::transposed(counts, ranks, experts / ranks),
                                       tk::rank_major_order(experts, ranks), rows, plan);
        auto* d_src = to_device(bytes);
        unsigned char* d_dst = nullptr;
        cudaMalloc(&d_dst, bytes.size() + 1);
        const int rc = why.empty() ? tk::sort_chunks(ctx, d_src, row_bytes, plan, d_dst) : 1;
        cudaStreamSynchronize(harness_of(&ctx)->stream);
        std::vector<unsigned char> expected(bytes.size());
        tk::sort_chunks_bytes_host(bytes.data(), row_bytes, plan, expected.data());
        report("sort_chunks E=" + std::to_string(experts) + " W=" + std::to_string(ranks) +
                   (direction ? " rank-major" : " local-expert-major"),
               rc == 0 && to_host(d_dst, bytes.size()) == expected, why);
        cudaFree(d_src);
        cudaFree(d_dst);
    }
}

void check_combine(const pkbw::Context& ctx, std::mt19937_64& gen, DType dtype, long long tokens,
                   long long experts, long long topk, long long n, int max_per_token) {
    std::normal_distribution<double> normal;
    std::uniform_int_distribution<long long> expert(0, experts - 1);
    std::uniform_int_distribution<int> per_token(0, max_per_token);
    const std::string tag = std::string(pkbw::dtype_name(dtype)) + " T=" + std::to_string(tokens) +
                            " N=" + std::to_string(n) + " <=" + std::to_string(max_per_token) + "/token";
    // Dense weights: random experts per (token, slot), repeats allowed.
    std::vector<double> weights(static_cast<std::size_t>(tokens * topk));
    std::vector<long long> selected(weights.size());
    for (std::size_t i = 0; i < weights.size(); ++i) {
        weights[i] = tk::round_to(dtype, std::fabs(normal(gen)));
        selected[i] = expert(gen);
    }
    const auto w_bytes = encode(dtype, weights);
    auto* d_w = to_device(w_bytes);
    auto* d_sel = to_device(selected);
    const std::size_t es = pkbw::element_size(dtype);
    unsigned char* d_dense = nullptr;
    cudaMalloc(&d_dense, static_cast<std::size_t>(tokens * experts) * es + 1);
    int rc = tk::dense_routing_weights(ctx, dtype, d_w, d_sel, tokens, topk, experts, d_dense);
    std::string err;
    const std::vector<double> dense =
        tk::dense_routing_weights_host(decode(dtype, w_bytes), selected, tokens, topk, experts, dtype, err);
    std::string where;
    report("dense_routing_weights " + tag,
           rc == 0 &&
               bits_equal(decode(dtype, to_host(d_dense, static_cast<std::size_t>(tokens * experts) * es)),
                          dense, where),
           rc ? harness_of(&ctx)->failure : where);

    // A routing map from the selected experts, its permutation, the per-row weights.
    std::vector<double> map(static_cast<std::size_t>(experts * tokens), 0.0);
    for (long long t = 0; t < tokens; ++t)
        for (long long j = 0; j < topk; ++j)
            map[selected[t * topk + j] * tokens + t] = 1.0;
    const auto map_bytes = encode(DType::Bool, map);
    auto* d_map = to_device(map_bytes);
    const tk::ExpertMajorPermutation perm = tk::expert_major_permutation_host(map, experts, tokens);
    const long long rows = perm.rows();
    long long* d_sorted = nullptr;
    int* d_rexp = nullptr;
    cudaMalloc(&d_sorted, sizeof(long long) * (rows + 1));
    cudaMalloc(&d_rexp, sizeof(int) * (rows + 1));
    std::vector<long long> counts;
    rc = tk::expert_major_permutation(ctx, d_map, DType::Bool, experts, tokens, d_sorted, d_rexp, rows,
                                      counts);
    unsigned char* d_roww = nullptr;
    cudaMalloc(&d_roww, static_cast<std::size_t>(rows) * es + 1);
    if (rc == 0)
        rc = tk::permuted_row_weights(ctx, dtype, d_dense, d_sorted, d_rexp, rows, experts, d_roww);
    cudaStreamSynchronize(harness_of(&ctx)->stream);
    const std::vector<double> row_w = tk::permuted_row_weights_host(dense, perm, experts);
    report("permuted_row_weights " + tag,
           rc == 0 &&
               bits_equal(decode(dtype, to_host(d_roww, static_cast<std::size_t>(rows) * es)), row_w, where),
           rc ? harness_of(&ctx)->failure : where);

    // The scatter-add: rows with random targets (0..max_per_token rows per token, shuffled), with and
    // without weights.
    std::vector<long long> targets;
    for (long long t = 0; t < tokens; ++t)
        for (int k = per_token(gen); k > 0; --k)
            targets.push_back(t);
    std::shuffle(targets.begin(), targets.end(), gen);
    const long long count = static_cast<long long>(targets.size());
    std::vector<double> x(static_cast<std::size_t>(count * n)), xw(static_cast<std::size_t>(count));
    for (double& v : x)
        v = tk::round_to(dtype, normal(gen) * 4);
    for (double& v : xw)
        v = tk::round_to(dtype, std::fabs(normal(gen)));
    const auto x_bytes = encode(dtype, x), xw_bytes = encode(dtype, xw);
    auto* d_x = to_device(x_bytes);
    auto* d_xw = to_device(xw_bytes);
    auto* d_t = to_device(targets);
    unsigned char* d_out = nullptr;
    cudaMalloc(&d_out, static_cast<std::size_t>(tokens * n) * es + 1);
    for (int weighted = 0; weighted < 2; ++weighted) {
        cudaMemset(d_out, 0x7f, static_cast<std::size_t>(tokens * n) * es); // garbage: must be overwritten
        rc = tk::unpermute_scatter_add(ctx, dtype, d_x, weighted ? d_xw : nullptr, d_t, count, tokens, n,
                                       d_out);
        cudaStreamSynchronize(harness_of(&ctx)->stream);
        const std::vector<double> expected = tk::unpermute_scatter_add_host(
            decode(dtype, x_bytes), weighted ? decode(dtype, xw_bytes) : std::vector<double>{}, targets,
            tokens, n, dtype, err);
        report(std::string("unpermute_scatter_add ") + (weighted ? "weighted " : "") + tag,
               rc == 0 && bits_equal(decode(dtype, to_host(d_out, static_cast<std::size_t>(tokens * n) * es)),
                                     expected, where),
               rc ? harness_of(&ctx)->failure : where);
    }
    // An out-of-range target fails.
    if (count > 0) {
        const long long bad = tokens;
        cudaMemcpy(d_t, &bad, sizeof bad, cudaMemcpyHostToDevice);
        rc = tk::unpermute_scatter_add(ctx, dtype, d_x, nullptr, d_t, count, tokens, n, d_out);
        report("unpermute_scatter_add refuses a bad target " + tag, rc != 0);
    }
    for (void* p : {static_cast<void*>(d_w), static_cast<void*>(d_sel), static_cast<void*>(d_dense),
                    static_cast<void*>(d_map), static_cast<void*>(d_sorted), static_cast<void*>(d_rexp),
                    static_cast<void*>(d_roww), static_cast<void*>(d_x), static_cast<void*>(d_xw),
                    static_cast<void*>(d_t), static_cast<void*>(d_out)})
        cudaFree(p);
}

} // namespace

int main() {
    Harness harness;
    cudaStreamCreate(&harness.stream);
    pkbw::Services services{};
    services.scratch = svc_scratch;
    services.fail = svc_fail;
    services.param = svc_param;
    pkbw::Context ctx{};
    ctx.abi_version = pkbw::kAbiVersion;
    ctx.world_size = 1;
    ctx.device = 0;
    ctx.stream_handle = harness.stream;
    ctx.services = &services;
    ctx.engine = &harness;
    std::mt19937_64 gen(2026);

    for (long long tokens : {1LL, 255LL, 256LL, 1000LL, 3000LL, 70000LL})
        check_permutation(ctx, gen, 8, tokens, DType::F32, 0.25);
    check_permutation(ctx, gen, 3, 5000, DType::Bool, 0.5);
    check_permutation(ctx, gen, 64, 777, DType::I64, 0.03);
    check_permutation(ctx, gen, 8, 4096, DType::BF16, 0.0);
    check_sort_chunks(ctx, gen, 8, 2, 33);
    check_sort_chunks(ctx, gen, 8, 4, 64);
    check_sort_chunks(ctx, gen, 8, 8, 5);
    for (DType dtype : {DType::BF16, DType::F32, DType::F16}) {
        check_combine(ctx, gen, dtype, 1, 8, 2, 16, 2);
        check_combine(ctx, gen, dtype, 1000, 8, 2, 64, 2);
        check_combine(ctx, gen, dtype, 3000, 8, 2, 33, 6); // 3 scan tiles; several adds per token
    }
    check_combine(ctx, gen, DType::BF16, 20000, 16, 4, 128, 3);
    std::printf("RESULT moe_permute: %d cases, %d failed\n", cases, failed);
    return failed == 0 ? 0 : 1;
}
