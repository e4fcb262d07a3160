// A stand-alone checker for problem references and samples on real GPUs, before the engine exists:
// one process, one thread per rank (one GPU each), the solution ABI's services implemented with
// peer access (symmetric memory), std::barrier and a shared host buffer. It runs a reference, a host
// oracle and a candidate on the same inputs and compares every rank's outputs.
//
//   gpu_smoke PROBLEM W M N DTYPE MODE REF.so HOSTREF.so CAND.so [ITERS]
//
// Not part of the test suite (it needs W GPUs); the engine's tests replace it. Variable-length outputs
// (ABI version 3) get length slots and set_output_length as the engine gives them (lengths.h); only the
// reported prefix is compared.
#include "lengths.h"
#include "pkbw/core/dtype.h"
#include "pkbw/core/problem.h"
#include "pkbw/problems/registry.h"
#include "pkbw/solution.h"

#include <barrier>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <map>
#include <mutex>
#include <nccl.h>
#include <string>
#include <thread>
#include <vector>

namespace {

using Fn = int (*)(const pkbw::Context&);

#define CK(x)                                                                                                \
    do {                                                                                                     \
        cudaError_t e_ = (x);                                                                                \
        if (e_ != cudaSuccess) {                                                                             \
            std::fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_));                  \
            std::exit(3);                                                                                    \
        }                                                                                                    \
    } while (0)

struct Shared {
    int world = 0;
    std::barrier<> sync;
    std::mutex mu;
    std::vector<std::byte> gather;
    // name -> per-rank buffers and pads
    std::map<std::string, std::vector<void*>> sym_bufs, sym_pads;
    std::map<std::string, double> params;
    explicit Shared(int w)
        : world(w)
        , sync(w) {}
};

struct SymEntry {
    std::vector<void*> peers, pads;
    void** peers_dev = nullptr;
    void** pads_dev = nullptr;
};

struct RankState {
    Shared* shared = nullptr;
    bool host = false;
    int rank = 0;
    std::map<std::string, SymEntry> sym;
    std::map<std::string, void*> scratch;
    cudaStream_t stream = nullptr;
    std::string failure;
};

RankState& state(const pkbw::Context* ctx) {
    return *static_cast<RankState*>(ctx->engine);
}

pkbw::SymmetricMemory svc_symmetric(const pkbw::Context* ctx, const char* name, std::size_t bytes) {
    RankState& st = state(ctx);
    const std::string key = name;
    auto it = st.sym.find(key);
    if (it == st.sym.end()) {
        Shared& sh = *st.shared;
        void* buf = nullptr;
        void* pad = nullptr;
        const std::size_t pad_bytes = pkbw::kSignalPadWords * 4;
        if (st.host) {
            buf = std::calloc(bytes ? bytes : 1, 1);
            pad = std::calloc(pad_bytes, 1);
        } else {
            CK(cudaMalloc(&buf, bytes ? bytes : 1));
            CK(cudaMemset(buf, 0, bytes ? bytes : 1));
            CK(cudaMalloc(&pad, pad_bytes));
            CK(cudaMemset(pad, 0, pad_bytes));
            CK(cudaDeviceSynchronize());
        }
        {
            std::lock_guard lock(sh.mu);
            auto& b = sh.sym_bufs[key + (st.host ? "#h" : "#d")];
            auto& p = sh.sym_pads[key + (st.host ? "#h" : "#d")];
            b.resize(sh.world);
            p.resize(sh.world);
            b[st.rank] = buf;
            p[st.rank] = pad;
        }
        sh.sync.arrive_and_wait();
        SymEntry e;
        {
            std::lock_guard lock(sh.mu);
            e.peers = sh.sym_bufs[key + (st.host ? "#h" : "#d")];
            e.pads = sh.sym_pads[key + (st.host ? "#h" : "#d")];
        }
        sh.sync.arrive_and_wait();
        if (st.host) {
            e.peers_dev = e.peers.data();
            e.pads_dev = e.pads.data();
        } else {
            CK(cudaMalloc(&e.peers_dev, sizeof(void*) * sh.world));
            CK(cudaMalloc(&e.pads_dev, sizeof(void*) * sh.world));
            CK(cudaMemcpy(e.peers_dev, e.peers.data(), sizeof(void*) * sh.world, cudaMemcpyHostToDevice));
            CK(cudaMemcpy(e.pads_dev, e.pads.data(), sizeof(void*) * sh.world, cudaMemcpyHostToDevice));
        }
        it = st.sym.emplace(key, std::move(e)).first;
    }
    SymEntry& e = it->second;
    return {e.peers[st.rank],
            e.peers.data(),
            e.peers_dev,
            reinterpret_cast<std::uint32_t* const*>(e.pads.data()),
            reinterpret_cast<std::uint32_t* const*>(e.pads_dev),
            bytes};
}

void* svc_scratch(const pkbw::Context* ctx, const char* name, std::size_t bytes) {
    RankState& st = state(ctx);
    const std::string key = std::string(name) + "#" + std::to_string(bytes);
    auto it = st.scratch.find(key);
    if (it != st.scratch.end())
        return it->second;
    void* p = nullptr;
    if (st.host)
        p = std::malloc(bytes ? bytes : 1);
    else
        CK(cudaMalloc(&p, bytes ? bytes : 1));
    st.scratch[key] = p;
    return p;
}

void svc_barrier(const pkbw::Context* ctx) {
    RankState& st = state(ctx);
    if (!st.host)
        CK(cudaStreamSynchronize(st.stream));
    st.shared->sync.arrive_and_wait();
}

void svc_all_gather_host(const pkbw::Context* ctx, const void* send, std::size_t bytes, void* recv) {
    RankState& st = state(ctx);
    Shared& sh = *st.shared;
    if (st.rank == 0) {
        std::lock_guard lock(sh.mu);
        sh.gather.assign(bytes * sh.world, std::byte{0});
    }
    sh.sync.arrive_and_wait();
    std::memcpy(sh.gather.data() + st.rank * bytes, send, bytes);
    sh.sync.arrive_and_wait();
    std::memcpy(recv, sh.gather.data(), bytes * sh.world);
    sh.sync.arrive_and_wait();
}

double svc_param(const pkbw::Context* ctx, const char* name, double fallback) {
    const auto& p = state(ctx).shared->params;
    auto it = p.find(name);
    return it == p.end() ? fallback : it->second;
}

int svc_fail(const pkbw::Context* ctx, const char* message) {
    state(ctx).failure = message;
    std::fprintf(stderr, "rank %d: solution failed: %s\n", ctx->rank, message);
    return 1;
}

// ABI version 2's sub-communicators need every rank's NCCL split; this one-process checker does not
// offer them (problems using ctx.sub_comm are checked with pkbw eval).
pkbw::SubComm svc_sub_comm(const pkbw::Context* ctx, const pkbw::SubCommLayout*) {
    std::fprintf(stderr,
                 "rank %d: gpu_smoke does not offer ctx.sub_comm; check this problem with pkbw eval\n",
                 ctx->rank);
    std::exit(2);
}

void svc_all_gather_group_host(const pkbw::Context* ctx, const pkbw::SubComm*, const void*, std::size_t,
                               void*) {
    svc_sub_comm(ctx, nullptr);
}

int svc_param_list(const pkbw::Context* ctx, const char* name, double* values, int capacity) {
    const auto& p = state(ctx).shared->params;
    const auto length = p.find(std::string(name) + "[]");
    if (length == p.end())
        return -1;
    const int count = static_cast<int>(length->second);
    for (int i = 0; i < count && i < capacity; ++i)
        values[i] = p.at(std::string(name) + "[" + std::to_string(i) + "]");
    return count;
}

// As the engine's: checked against the output's bound, then written to the slot (in stream order on
// cuda: a kernel may write the same slot; the value is staged from the stack before the call returns).
int svc_set_output_length(const pkbw::Context* ctx, int output, std::int64_t length) {
    const std::string where =
        "ctx.set_output_length(" + std::to_string(output) + ", " + std::to_string(length) + "): ";
    if (ctx->output_lengths == nullptr)
        return svc_fail(ctx, (where + "no output of this problem has a variable length").c_str());
    if (output < 0 || output >= ctx->num_outputs)
        return svc_fail(ctx, (where + "there are " + std::to_string(ctx->num_outputs) + " outputs").c_str());
    const std::int64_t bound = ctx->outputs[output].ndim > 0 ? ctx->outputs[output].shape[0] : 1;
    if (length < 0 || length > bound)
        return svc_fail(ctx,
                        (where + "outside 0.." + std::to_string(bound) + " (the output's bound)").c_str());
    RankState& st = state(ctx);
    if (st.host)
        ctx->output_lengths[output] = length;
    else
        CK(cudaMemcpyAsync(ctx->output_lengths + output, &length, sizeof length, cudaMemcpyHostToDevice,
                           st.stream));
    return 0;
}

const pkbw::Services kServices{svc_symmetric,  svc_scratch,
                               svc_barrier,    svc_all_gather_host,
                               svc_param,      svc_fail,
                               svc_sub_comm,   svc_all_gather_group_host,
                               svc_param_list, svc_set_output_length};

Fn load(const char* path) {
    void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        std::fprintf(stderr, "dlopen %s: %s\n", path, dlerror());
        std::exit(2);
    }
    return reinterpret_cast<Fn>(dlsym(h, "pkbw_solution"));
}

pkbw::TensorView view_of(const pkbw::TensorSpec& spec, void* data) {
    pkbw::TensorView v{};
    v.name = spec.name.c_str();
    v.dtype = spec.dtype;
    v.ndim = static_cast<int>(spec.shape.size());
    std::int64_t stride = 1;
    for (int i = v.ndim - 1; i >= 0; --i) {
        v.shape[i] = spec.shape[i];
        v.strides[i] = stride;
        stride *= spec.shape[i];
    }
    v.data = data;
    return v;
}

struct Compared {
    std::int64_t mismatches = 0, unequal = 0, count = 0;
    double max_abs = 0;
};

Compared compare(const std::vector<std::byte>& ref, const std::vector<std::byte>& got, pkbw::DType dt,
                 double atol, double rtol) {
    Compared c;
    const std::size_t es = pkbw::dtype_size(dt);
    c.count = static_cast<std::int64_t>(ref.size() / es);
    for (std::int64_t i = 0; i < c.count; ++i) {
        const float a = pkbw::element_to_f32(dt, ref.data() + i * es);
        const float b = pkbw::element_to_f32(dt, got.data() + i * es);
        const double d = std::fabs(double(a) - double(b));
        c.unequal += !(a == b);
        c.max_abs = std::max(c.max_abs, std::isnan(d) ? INFINITY : d);
        if (!(d <= atol + rtol * std::fabs(double(b))))
            ++c.mismatches;
    }
    return c;
}

// `got` against `ref` on output `spec`'s valid prefix (the whole output when it is fixed): one line, and
// whether it failed. A variable output whose lengths are invalid or differ fails without comparing values.
bool report_pair(int rank, const pkbw::TensorSpec& spec, const char* what, const pkbw::ProblemInfo& info,
                 std::vector<std::byte> ref, std::int64_t ref_rows, std::vector<std::byte> got,
                 std::int64_t got_rows) {
    if (auto why =
            gpu_smoke::trim_to_lengths(ref, ref_rows, got, got_rows, gpu_smoke::leading_dimension(spec))) {
        std::printf("rank %d %s: %s  %s\n", rank, spec.name.c_str(), what, why->c_str());
        return true;
    }
    const Compared c = compare(ref, got, spec.dtype, info.atol, info.rtol);
    std::printf("rank %d %s: %s  mismatches %lld/%lld unequal %lld max_abs %g%s\n", rank, spec.name.c_str(),
                what, (long long)c.mismatches, (long long)c.count, (long long)c.unequal, c.max_abs,
                spec.variable_length ? (" (length " + std::to_string(ref_rows) + ")").c_str() : "");
    return c.mismatches != 0;
}

} // namespace

int main(int argc, char** argv) {
    if (argc < 10) {
        std::fprintf(stderr,
                     "usage: gpu_smoke PROBLEM W M N DTYPE pkb|exact REF.so HOSTREF.so CAND.so [ITERS]\n");
        return 2;
    }
    const pkbw::Problem* problem = pkbw::find_problem(argv[1]);
    if (!problem) {
        std::fprintf(stderr, "unknown problem %s\n", argv[1]);
        return 2;
    }
    pkbw::ProblemConfig cfg;
    cfg.world_size = std::atoi(argv[2]);
    cfg.m = std::atoll(argv[3]);
    cfg.n = std::atoll(argv[4]);
    cfg.dtype = *pkbw::parse_dtype(argv[5]);
    cfg.input_mode = *pkbw::parse_input_mode(argv[6]);
    const int iters = argc > 10 ? std::atoi(argv[10]) : 20;
    if (auto why = problem->check_config(cfg)) {
        std::fprintf(stderr, "config refused: %s\n", why->c_str());
        return 2;
    }
    const Fn ref = load(argv[7]);
    const Fn host_ref = std::strcmp(argv[8], "-") ? load(argv[8]) : nullptr;
    const Fn cand = std::strcmp(argv[9], "-") ? load(argv[9]) : nullptr;
    const int W = cfg.world_size;
    std::vector<ncclComm_t> comms(W);
    std::vector<int> devs(W);
    for (int r = 0; r < W; ++r) {
        devs[r] = r;
        CK(cudaSetDevice(r));
        for (int p = 0; p < W; ++p)
            if (p != r)
                cudaDeviceEnablePeerAccess(p, 0);
    }
    if (ncclCommInitAll(comms.data(), W, devs.data()) != ncclSuccess) {
        std::fprintf(stderr, "ncclCommInitAll failed\n");
        return 3;
    }
    Shared shared(W);
    shared.params = problem->params(cfg);
    std::vector<int> bad(W, 0);
    std::vector<double> t_ref(W), t_cand(W);
    std::vector<std::thread> threads;
    for (int r = 0; r < W; ++r) {
        threads.emplace_back([&, r] {
            CK(cudaSetDevice(r));
            const auto in_specs = problem->input_specs(cfg, r);
            const auto out_specs = problem->output_specs(cfg, r);
            auto inputs = problem->build_inputs(cfg, r);
            RankState dev_state{&shared, false, r};
            RankState host_state{&shared, true, r};
            CK(cudaStreamCreate(&dev_state.stream));
            std::vector<pkbw::TensorView> din, hin;
            for (std::size_t i = 0; i < inputs.size(); ++i) {
                void* d = nullptr;
                CK(cudaMalloc(&d, inputs[i].nbytes() ? inputs[i].nbytes() : 1));
                CK(cudaMemcpy(d, inputs[i].data(), inputs[i].nbytes(), cudaMemcpyHostToDevice));
                din.push_back(view_of(in_specs[i], d));
                void* h = std::malloc(inputs[i].nbytes() ? inputs[i].nbytes() : 1);
                std::memcpy(h, inputs[i].data(), inputs[i].nbytes());
                hin.push_back(view_of(in_specs[i], h));
            }
            auto make_outputs = [&](bool host) {
                std::vector<pkbw::TensorView> v;
                for (const auto& s : out_specs) {
                    const std::size_t bytes = pkbw::shape_numel(s.shape) * pkbw::dtype_size(s.dtype);
                    void* p = nullptr;
                    if (host) {
                        p = std::malloc(bytes ? bytes : 1);
                        std::memset(p, 0xFF, bytes);
                    } else {
                        CK(cudaMalloc(&p, bytes ? bytes : 1));
                        CK(cudaMemset(p, 0xFF, bytes)); // NaN in every float type: unwritten outputs show
                    }
                    v.push_back(view_of(s, p));
                }
                return v;
            };
            auto dref = make_outputs(false), dcand = make_outputs(false), href = make_outputs(true);
            const gpu_smoke::LengthSlots ref_len(out_specs, false), cand_len(out_specs, false),
                host_len(out_specs, true);
            auto ctx_for = [&](RankState& st, std::vector<pkbw::TensorView>& in,
                               std::vector<pkbw::TensorView>& out, const gpu_smoke::LengthSlots& len) {
                pkbw::Context c{};
                c.abi_version = pkbw::kAbiVersion;
                c.rank = r;
                c.world_size = W;
                c.local_rank = r;
                c.device = st.host ? -1 : r;
                c.stream_handle = st.host ? nullptr : st.stream;
                c.nccl_handle = st.host ? nullptr : comms[r];
                c.num_inputs = static_cast<int>(in.size());
                c.inputs = in.data();
                c.num_outputs = static_cast<int>(out.size());
                c.outputs = out.data();
                c.services = &kServices;
                c.engine = &st;
                c.output_lengths = len.slots();
                return c;
            };
            const pkbw::Context cref = ctx_for(dev_state, din, dref, ref_len);
            const pkbw::Context ccand = ctx_for(dev_state, din, dcand, cand_len);
            const pkbw::Context chost = ctx_for(host_state, hin, href, host_len);
            // Every call starts from fresh length slots, as the engine's do.
            auto call = [&](Fn fn, const pkbw::Context& c, const gpu_smoke::LengthSlots& len) {
                len.reset(dev_state.stream);
                return fn(c);
            };
            auto timed = [&](Fn fn, const pkbw::Context& c, const gpu_smoke::LengthSlots& len, double& ms) {
                if (call(fn, c, len) != 0) {
                    bad[r] = 1;
                    return;
                }
                CK(cudaStreamSynchronize(dev_state.stream));
                shared.sync.arrive_and_wait();
                cudaEvent_t a, b;
                CK(cudaEventCreate(&a));
                CK(cudaEventCreate(&b));
                for (int i = 0; i < 3; ++i)
                    call(fn, c, len);
                CK(cudaEventRecord(a, dev_state.stream));
                for (int i = 0; i < iters; ++i)
                    call(fn, c, len);
                CK(cudaEventRecord(b, dev_state.stream));
                CK(cudaEventSynchronize(b));
                float f = 0;
                CK(cudaEventElapsedTime(&f, a, b));
                ms = f / iters;
                shared.sync.arrive_and_wait();
            };
            // A problem that mutates its inputs (21's in-place clipping) was just called 24 times on the
            // same buffers: the outputs compared below come from one more call on fresh inputs.
            auto fresh_call = [&](Fn fn, const pkbw::Context& c, const gpu_smoke::LengthSlots& len) {
                if (!problem->info().mutates_inputs)
                    return;
                for (std::size_t i = 0; i < inputs.size(); ++i)
                    CK(cudaMemcpy(din[i].data, inputs[i].data(), inputs[i].nbytes(), cudaMemcpyHostToDevice));
                shared.sync.arrive_and_wait();
                if (call(fn, c, len) != 0)
                    bad[r] = 1;
                CK(cudaStreamSynchronize(dev_state.stream));
                shared.sync.arrive_and_wait();
            };
            timed(ref, cref, ref_len, t_ref[r]);
            fresh_call(ref, cref, ref_len);
            if (cand) {
                timed(cand, ccand, cand_len, t_cand[r]);
                fresh_call(cand, ccand, cand_len);
            }
            if (host_ref && call(host_ref, chost, host_len) != 0)
                bad[r] = 1;
            CK(cudaDeviceSynchronize());
            for (std::size_t o = 0; o < out_specs.size(); ++o) {
                const std::size_t bytes = dref[o].nbytes();
                std::vector<std::byte> a(bytes), b(bytes), h(bytes);
                CK(cudaMemcpy(a.data(), dref[o].data, bytes, cudaMemcpyDeviceToHost));
                CK(cudaMemcpy(b.data(), dcand[o].data, bytes, cudaMemcpyDeviceToHost));
                std::memcpy(h.data(), href[o].data, bytes);
                const auto& info = problem->info();
                if (host_ref)
                    bad[r] |= report_pair(r, out_specs[o], "ref vs host", info, std::move(h),
                                          host_len.rows(o), a, ref_len.rows(o));
                if (cand)
                    bad[r] |= report_pair(r, out_specs[o], "cand vs ref", info, std::move(a), ref_len.rows(o),
                                          std::move(b), cand_len.rows(o));
            }
        });
    }
    for (auto& t : threads)
        t.join();
    double mr = 0, mc = 0;
    for (int r = 0; r < W; ++r) {
        mr = std::max(mr, t_ref[r]);
        mc = std::max(mc, t_cand[r]);
    }
    int failed = 0;
    for (int b : bad)
        failed |= b;
    std::printf("RESULT %s W=%d M=%lld N=%lld %s %s: %s  ref %.4f ms  cand %.4f ms  speedup %.2fx\n", argv[1],
                W, (long long)cfg.m, (long long)cfg.n, argv[5], argv[6], failed ? "FAIL" : "pass", mr, mc,
                mc > 0 ? mr / mc : 0.0);
    return failed;
}
