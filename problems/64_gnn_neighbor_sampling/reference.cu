// Reference for PKB problem 64 on the device, hop by hop as PKB's loop: the frontier's owners
// (node_to_rank) and a stable radix sort by owner (tk::stable_sort_pairs, tk::histogram), the counts and
// ids exchanged (tk::exchange_counts, tk::all_to_all_v), the first `fanout` neighbours of every received
// node (a scan of the takes), PKB's three reply exchanges (ids, edge ids, counts), the replies put back in
// frontier order (the sort's inverse), the first-occurrence dedup (tk::unique_first, unique.cuh), and at the
// end the relabel through a node -> position table. Host round trips carry only counts. A rank whose
// frontier is empty keeps taking part in the exchanges with nothing to send (as the oracle).
#include "pkbw/solution.h"
#include "pkbw/toolkit/alltoall.cuh"
#include "pkbw/toolkit/check.cuh"
#include "pkbw/toolkit/exchange_v.h"
#include "pkbw/toolkit/gather.cuh"
#include "pkbw/toolkit/sort.cuh"
#include "pkbw/toolkit/unique.cuh"

#include <vector>

namespace {

namespace tk = pkbw::tk;
using Counts = std::vector<long long>;

struct Graph {
    const long long *colptr, *col, *owner;
    long long nodes;
};

long long* ids(const pkbw::Context& ctx, const char* name, long long count) {
    return static_cast<long long*>(
        ctx.scratch(name, sizeof(long long) * static_cast<std::size_t>(count > 0 ? count : 1)));
}

__global__ void owners_of(const long long* src, long long n, Graph g, int world, int* owner, int* bad) {
    for (long long i = PKBW_GRID_STRIDE_BEGIN; i < n; i += PKBW_GRID_STRIDE_STEP) {
        const long long v = src[i];
        const long long o = v >= 0 && v < g.nodes ? g.owner[v] : -1;
        if (o < 0 || o >= world) {
            *bad = 1;
        }
        owner[i] = o < 0 || o >= world ? 0 : static_cast<int>(o);
    }
}

// takes[i] = min(fanout, degree of recv[i]) (all of them when fanout < 0).
__global__ void takes_of(const long long* recv, long long n, Graph g, long long fanout, long long* takes) {
    for (long long i = PKBW_GRID_STRIDE_BEGIN; i < n; i += PKBW_GRID_STRIDE_STEP) {
        const long long degree = g.colptr[recv[i] + 1] - g.colptr[recv[i]];
        takes[i] = fanout >= 0 && fanout < degree ? fanout : degree;
    }
}

__global__ void first_neighbours(const long long* recv, long long n, Graph g, const long long* takes,
                                 const long long* starts, long long* sampled, long long* edges) {
    for (long long i = PKBW_GRID_STRIDE_BEGIN; i < n; i += PKBW_GRID_STRIDE_STEP) {
        const long long first = g.colptr[recv[i]];
        for (long long j = 0; j < takes[i]; ++j) {
            sampled[starts[i] + j] = g.col[first + j];
            edges[starts[i] + j] = first + j;
        }
    }
}

// Frontier node i's reply is chunk grouped[i] (the inverse of the owner sort's permutation).
__global__ void inverse_of(const long long* perm, long long n, long long* grouped) {
    for (long long j = PKBW_GRID_STRIDE_BEGIN; j < n; j += PKBW_GRID_STRIDE_STEP) {
        grouped[perm[j]] = j;
    }
}

__global__ void counts_in_frontier_order(const long long* grouped, const long long* reply_counts, long long n,
                                         long long* out) {
    for (long long i = PKBW_GRID_STRIDE_BEGIN; i < n; i += PKBW_GRID_STRIDE_STEP) {
        out[i] = reply_counts[grouped[i]];
    }
}

struct Replies {
    const long long *nodes, *edges, *counts, *starts;
};

__global__ void put_in_frontier_order(const long long* src, long long n, const long long* grouped, Replies r,
                                      const long long* out_starts, long long* nodes, long long* dst,
                                      long long* edges) {
    for (long long i = PKBW_GRID_STRIDE_BEGIN; i < n; i += PKBW_GRID_STRIDE_STEP) {
        const long long k = grouped[i];
        for (long long j = 0; j < r.counts[k]; ++j) {
            nodes[out_starts[i] + j] = r.nodes[r.starts[k] + j];
            edges[out_starts[i] + j] = r.edges[r.starts[k] + j];
            dst[out_starts[i] + j] = src[i];
        }
    }
}

__global__ void relabel(const long long* node, long long count, long long* position) {
    for (long long i = PKBW_GRID_STRIDE_BEGIN; i < count; i += PKBW_GRID_STRIDE_STEP) {
        position[node[i]] = i;
    }
}

__global__ void positions_of(const long long* position, const long long* ids, long long count,
                             long long* out) {
    for (long long i = PKBW_GRID_STRIDE_BEGIN; i < count; i += PKBW_GRID_STRIDE_STEP) {
        out[i] = position[ids[i]];
    }
}

Counts to_host(const pkbw::Context& ctx, const long long* device, long long count, int& rc) {
    Counts host(static_cast<std::size_t>(count));
    rc = count > 0 ? (cudaMemcpyAsync(host.data(), device, sizeof(long long) * count, cudaMemcpyDeviceToHost,
                                      ctx.stream()) != cudaSuccess ||
                      cudaStreamSynchronize(ctx.stream()) != cudaSuccess)
                   : 0;
    return host;
}

// The frontier partitioned by owner and exchanged: what this rank must sample, and the permutation.
struct Routed {
    Counts send_counts, recv_counts;
    long long* perm;
    long long* recv;
    long long received;
};

int route(const pkbw::Context& ctx, const Graph& g, const long long* src, long long n, Routed& out) {
    const int world = ctx.world_size;
    int* owner = static_cast<int*>(ctx.scratch("gnn64_owner", sizeof(int) * (n > 0 ? 2 * n : 1)));
    int* bad = static_cast<int*>(ctx.scratch("gnn64_bad", sizeof(int)));
    long long* order = ids(ctx, "gnn64_order", n);
    out.perm = ids(ctx, "gnn64_perm", n);
    PKBW_CHECK(ctx, cudaMemsetAsync(bad, 0, sizeof(int), ctx.stream()));
    if (n > 0) {
        owners_of<<<tk::grid_for(n), 256, 0, ctx.stream()>>>(src, n, g, world, owner, bad);
        tk::detail::iota_kernel<<<tk::grid_for(n), 256, 0, ctx.stream()>>>(order, n, 0);
        PKBW_CHECK(ctx, cudaGetLastError());
        PKBW_TRY(tk::stable_sort_pairs(ctx, owner, owner + n, order, out.perm, n));
    }
    long long* counts = ids(ctx, "gnn64_counts", world);
    PKBW_TRY(tk::histogram(ctx, owner, n, world, counts)); // synchronises: `bad` is final too
    int flag = 0, rc = 0;
    PKBW_CHECK(ctx, cudaMemcpy(&flag, bad, sizeof(int), cudaMemcpyDeviceToHost));
    if (flag) {
        return ctx.fail("64 reference: a frontier node or its owner is out of range");
    }
    out.send_counts = to_host(ctx, counts, world, rc);
    long long* send = ids(ctx, "gnn64_send", n);
    PKBW_TRY(tk::gather_rows(ctx, src, sizeof(long long), out.perm, n, n, send));
    out.recv_counts = tk::exchange_counts(ctx, out.send_counts);
    out.received = tk::total_of(out.recv_counts);
    out.recv = ids(ctx, "gnn64_recv", out.received);
    PKBW_TRY(tk::all_to_all_v(ctx, ctx.nccl(), send, out.send_counts.data(), out.recv, out.recv_counts.data(),
                              sizeof(long long)));
    return rc ? ctx.fail("64 reference: a count copy failed") : 0;
}

// This rank's hop as an owner: the first `fanout` neighbours of what it received, sent back to the sources
// (PKB's _exchange_replies), then put in frontier order into `hop` (nodes, dst, edges) with `sampled` set.
struct HopOut {
    long long *nodes, *dst, *edges;
    long long capacity; // room left in the edge outputs
    long long sampled;
};

int sample_and_reply(const pkbw::Context& ctx, const Graph& g, const long long* src, long long n,
                     const Routed& routed, long long fanout, HopOut& hop) {
    int rc = 0;
    const long long received = routed.received;
    long long* takes = ids(ctx, "gnn64_takes", received + 1);
    long long* starts = ids(ctx, "gnn64_starts", received + 1);
    PKBW_CHECK(ctx, cudaMemsetAsync(takes + received, 0, sizeof(long long), ctx.stream()));
    if (received > 0) {
        takes_of<<<tk::grid_for(received), 256, 0, ctx.stream()>>>(routed.recv, received, g, fanout, takes);
        PKBW_CHECK(ctx, cudaGetLastError());
    }
    PKBW_TRY(tk::exclusive_scan(ctx, takes, starts, received + 1)); // starts[received] = all samples
    const Counts host_takes = to_host(ctx, takes, received, rc);
    const long long total = to_host(ctx, starts + received, 1, rc)[0];
    long long* sampled = ids(ctx, "gnn64_sampled", total);
    long long* edges = ids(ctx, "gnn64_edges", total);
    if (received > 0) {
        first_neighbours<<<tk::grid_for(received), 256, 0, ctx.stream()>>>(routed.recv, received, g, takes,
                                                                           starts, sampled, edges);
        PKBW_CHECK(ctx, cudaGetLastError());
    }
    Counts reply_sizes; // per source: the takes of its chunk summed
    long long at = 0;
    for (const long long count : routed.recv_counts) {
        long long sum = 0;
        for (long long i = 0; i < count; ++i) {
            sum += host_takes[static_cast<std::size_t>(at + i)];
        }
        reply_sizes.push_back(sum);
        at += count;
    }
    const Counts arriving = tk::exchange_counts(ctx, reply_sizes);
    const long long back = tk::total_of(arriving);
    long long* reply_nodes = ids(ctx, "gnn64_reply_nodes", back);
    long long* reply_edges = ids(ctx, "gnn64_reply_edges", back);
    long long* reply_counts = ids(ctx, "gnn64_reply_counts", n + 1);
    long long* reply_starts = ids(ctx, "gnn64_reply_starts", n + 1);
    PKBW_TRY(tk::all_to_all_v(ctx, ctx.nccl(), sampled, reply_sizes.data(), reply_nodes, arriving.data(), 8));
    PKBW_TRY(tk::all_to_all_v(ctx, ctx.nccl(), edges, reply_sizes.data(), reply_edges, arriving.data(), 8));
    PKBW_TRY(tk::all_to_all_v(ctx, ctx.nccl(), takes, routed.recv_counts.data(), reply_counts,
                              routed.send_counts.data(), 8));
    PKBW_TRY(tk::exclusive_scan(ctx, reply_counts, reply_starts, n));
    long long* grouped = ids(ctx, "gnn64_grouped", n);
    long long* out_counts = ids(ctx, "gnn64_out_counts", n + 1);
    long long* out_starts = ids(ctx, "gnn64_out_starts", n + 1);
    PKBW_CHECK(ctx, cudaMemsetAsync(out_counts + n, 0, sizeof(long long), ctx.stream()));
    if (n > 0) {
        inverse_of<<<tk::grid_for(n), 256, 0, ctx.stream()>>>(routed.perm, n, grouped);
        counts_in_frontier_order<<<tk::grid_for(n), 256, 0, ctx.stream()>>>(grouped, reply_counts, n,
                                                                            out_counts);
        PKBW_CHECK(ctx, cudaGetLastError());
    }
    PKBW_TRY(tk::exclusive_scan(ctx, out_counts, out_starts, n + 1));
    hop.sampled = to_host(ctx, out_starts + n, 1, rc)[0];
    if (hop.sampled > hop.capacity) {
        return ctx.fail("64 reference: more sampled edges than the outputs' bound");
    }
    if (n > 0) {
        put_in_frontier_order<<<tk::grid_for(n), 256, 0, ctx.stream()>>>(
            src, n, grouped, Replies{reply_nodes, reply_edges, reply_counts, reply_starts}, out_starts,
            hop.nodes, hop.dst, hop.edges);
        PKBW_CHECK(ctx, cudaGetLastError());
    }
    return rc ? ctx.fail("64 reference: a count copy failed") : 0;
}

bool every_rank(const pkbw::Context& ctx, bool mine) {
    return tk::total_of(tk::gather_counts(ctx, mine ? 1 : 0)) == ctx.world_size;
}

// The sampled edges so far (PKB's node_with_dupl, dst_with_dupl, edge) and the nodes (in output 0).
struct Sampled {
    long long *node_dupl, *dst_dupl, *edges, *node;
    long long edge_count, node_count;
};

// One hop of PKB's loop; `done` as PKB's breaks (an empty frontier, an empty hop).
int hop(const pkbw::Context& ctx, const Graph& g, long long*& src, long long& n, long long fanout, Sampled& s,
        bool& done) {
    Routed routed{};
    PKBW_TRY(route(ctx, g, src, done ? 0 : n, routed));
    HopOut out{s.node_dupl + s.edge_count, s.dst_dupl + s.edge_count, s.edges + s.edge_count,
               ctx.output(1).shape[0] - s.edge_count, 0};
    PKBW_TRY(sample_and_reply(ctx, g, src, done ? 0 : n, routed, fanout, out));
    done = done || out.sampled == 0;
    if (done) {
        return 0;
    }
    // PKB's _remove_duplicates: unique first occurrences of cat(node, out_node); src = the new ones.
    long long* combined = ids(ctx, "gnn64_combined", s.node_count + out.sampled);
    PKBW_CHECK(ctx, cudaMemcpyAsync(combined, s.node, sizeof(long long) * s.node_count,
                                    cudaMemcpyDeviceToDevice, ctx.stream()));
    PKBW_CHECK(ctx, cudaMemcpyAsync(combined + s.node_count, out.nodes, sizeof(long long) * out.sampled,
                                    cudaMemcpyDeviceToDevice, ctx.stream()));
    long long distinct = 0;
    PKBW_TRY(tk::unique_first(ctx, combined, s.node_count + out.sampled, s.node, distinct));
    const long long old_count = s.node_count;
    n = distinct > old_count ? distinct - old_count : 0;
    src = ids(ctx, "gnn64_src", n);
    PKBW_CHECK(ctx, cudaMemcpyAsync(src, s.node + old_count, sizeof(long long) * n, cudaMemcpyDeviceToDevice,
                                    ctx.stream()));
    s.node_count = distinct;
    s.edge_count += out.sampled;
    done = n == 0;
    return 0;
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const Graph g{ctx.input(1).as<const long long>(), ctx.input(2).as<const long long>(),
                  ctx.input(3).as<const long long>(), ctx.input(3).shape[0]};
    const long long seeds = ctx.input(0).shape[0], bound = ctx.output(1).shape[0];
    if (seeds > ctx.output(0).shape[0]) {
        return ctx.fail("64 reference: more seeds than the node output's bound");
    }
    Sampled s{ids(ctx, "gnn64_node_dupl", bound),
              ids(ctx, "gnn64_dst_dupl", bound),
              ctx.output(3).as<long long>(),
              ctx.output(0).as<long long>(),
              0,
              seeds};
    PKBW_CHECK(ctx, cudaMemcpyAsync(s.node, ctx.input(0).data, sizeof(long long) * seeds,
                                    cudaMemcpyDeviceToDevice, ctx.stream()));
    long long* src = ids(ctx, "gnn64_src", seeds);
    PKBW_CHECK(ctx, cudaMemcpyAsync(src, ctx.input(0).data, sizeof(long long) * seeds,
                                    cudaMemcpyDeviceToDevice, ctx.stream()));
    long long n = seeds;
    double fanouts[16];
    const int hops = ctx.param_list("fanouts", fanouts, 16);
    bool done = false;
    for (int h = 0; h < hops && h < 16; ++h) {
        done = done || n == 0;
        if (every_rank(ctx, done)) {
            break;
        }
        PKBW_TRY(hop(ctx, g, src, n, static_cast<long long>(fanouts[h]), s, done));
    }
    // PKB's _relabel_neighborhood: row, col = each sampled edge's ends as positions in node.
    long long* position = ids(ctx, "gnn64_position", g.nodes);
    if (s.node_count > 0 && s.edge_count > 0) {
        relabel<<<tk::grid_for(s.node_count), 256, 0, ctx.stream()>>>(s.node, s.node_count, position);
        positions_of<<<tk::grid_for(s.edge_count), 256, 0, ctx.stream()>>>(
            position, s.node_dupl, s.edge_count, ctx.output(1).as<long long>());
        positions_of<<<tk::grid_for(s.edge_count), 256, 0, ctx.stream()>>>(position, s.dst_dupl, s.edge_count,
                                                                           ctx.output(2).as<long long>());
        PKBW_CHECK(ctx, cudaGetLastError());
    }
    PKBW_TRY(ctx.set_output_length(0, s.node_count));
    for (int output = 1; output <= 3; ++output) {
        PKBW_TRY(ctx.set_output_length(output, s.edge_count));
    }
    return tk::finish(ctx);
}
