// Host oracle for PKB problem 64: PKB's steps on the host, hop by hop: the frontier partitioned by owner
// (a stable sort, sort_host.h), the counts and ids exchanged (exchange_v.h, tk::all_to_all_v_host), the
// first `fanout` neighbours of every received node, the three reply exchanges (ids, edge ids, counts), the
// replies put back in frontier order, and the first-occurrence dedup (tk::unique_first); then the relabel.
// A rank whose frontier is empty keeps taking part in the exchanges with nothing to send, so that every rank
// makes the same calls (PKB's ranks would diverge there; its inputs never get there).
#include "pkbw/solution.h"
#include "pkbw/toolkit/exchange_v.h"
#include "pkbw/toolkit/host.h"
#include "pkbw/toolkit/sort_host.h"

#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

namespace tk = pkbw::tk;
using Ids = std::vector<long long>;

struct Graph {
    const long long* colptr;
    const long long* col;
    const long long* owner;
    long long nodes;
};

Ids exchange(const pkbw::Context& ctx, const Ids& send, const std::vector<long long>& send_counts) {
    const std::vector<std::byte> bytes =
        tk::all_to_all_v_host(ctx, send.data(), send_counts, sizeof(long long));
    Ids out(bytes.size() / sizeof(long long));
    std::memcpy(out.data(), bytes.data(), bytes.size());
    return out;
}

struct Hop {
    Ids nodes, dst, edges; // per frontier node in frontier order: its samples, itself repeated, the edge ids
};

// One hop of PKB's loop for frontier `src`; false (with ctx.fail called) on a node outside the graph.
bool sample_hop(const pkbw::Context& ctx, const Graph& g, const Ids& src, long long fanout, Hop& out) {
    const long long n = static_cast<long long>(src.size());
    std::vector<long long> owner(src.size());
    for (std::size_t i = 0; i < src.size(); ++i) {
        if (src[i] < 0 || src[i] >= g.nodes || g.owner[src[i]] < 0 || g.owner[src[i]] >= ctx.world_size) {
            ctx.fail(("64 oracle: frontier node " + std::to_string(src[i]) + " or its owner is out of range")
                         .c_str());
            return false;
        }
        owner[i] = g.owner[src[i]];
    }
    const Ids perm = tk::stable_argsort_by_key(owner.data(), n); // PKB's per-owner nonzero lists
    std::vector<long long> send_counts;
    tk::histogram(owner.data(), n, ctx.world_size, send_counts);
    Ids send(src.size());
    for (std::size_t j = 0; j < perm.size(); ++j) {
        send[j] = src[static_cast<std::size_t>(perm[j])];
    }
    const std::vector<long long> recv_counts = tk::exchange_counts(ctx, send_counts);
    const Ids recv = exchange(ctx, send, send_counts);
    Ids sampled, edges, takes; // the owner's side: first `fanout` neighbours of each received node
    for (const long long v : recv) {
        const long long start = g.colptr[v], degree = g.colptr[v + 1] - start;
        const long long take = fanout >= 0 && fanout < degree ? fanout : degree;
        for (long long j = 0; j < take; ++j) {
            sampled.push_back(g.col[start + j]);
            edges.push_back(start + j);
        }
        takes.push_back(take);
    }
    std::vector<long long> reply_sizes; // samples going back to each source: its chunk's takes summed
    long long at = 0;
    for (const long long count : recv_counts) {
        long long sum = 0;
        for (long long i = 0; i < count; ++i) {
            sum += takes[static_cast<std::size_t>(at + i)];
        }
        reply_sizes.push_back(sum);
        at += count;
    }
    const Ids reply_nodes = exchange(ctx, sampled, reply_sizes),
              reply_edges = exchange(ctx, edges, reply_sizes);
    const Ids reply_counts = exchange(ctx, takes, recv_counts); // one per node sent, in send order
    const std::vector<long long> starts = tk::exclusive_scan(reply_counts);
    Ids grouped(src.size()); // PKB's rank_offsets[partition_ids] + partition_orders: perm's inverse
    for (std::size_t j = 0; j < perm.size(); ++j) {
        grouped[static_cast<std::size_t>(perm[j])] = static_cast<long long>(j);
    }
    for (std::size_t i = 0; i < src.size(); ++i) {
        const std::size_t k = static_cast<std::size_t>(grouped[i]);
        for (long long j = 0; j < reply_counts[k]; ++j) {
            out.nodes.push_back(reply_nodes[static_cast<std::size_t>(starts[k] + j)]);
            out.edges.push_back(reply_edges[static_cast<std::size_t>(starts[k] + j)]);
            out.dst.push_back(src[i]);
        }
    }
    return true;
}

bool every_rank(const pkbw::Context& ctx, bool mine) {
    const std::vector<long long> all = tk::gather_counts(ctx, mine ? 1 : 0);
    return tk::total_of(all) == ctx.world_size;
}

int write_ids(const pkbw::Context& ctx, int output, const Ids& ids) {
    if (static_cast<long long>(ids.size()) > ctx.output(output).shape[0]) {
        return ctx.fail("64 oracle: more ids than the output's bound");
    }
    std::memcpy(ctx.output(output).data, ids.data(), sizeof(long long) * ids.size());
    return ctx.set_output_length(output, static_cast<long long>(ids.size()));
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const Graph g{ctx.input(1).as<const long long>(), ctx.input(2).as<const long long>(),
                  ctx.input(3).as<const long long>(), ctx.input(3).shape[0]};
    const auto* seeds = ctx.input(0).as<const long long>();
    Ids node(seeds, seeds + ctx.input(0).shape[0]), src = node, node_dupl, dst_dupl, edge;
    double fanouts[16];
    const int hops = ctx.param_list("fanouts", fanouts, 16);
    bool done = false; // PKB's break: an empty frontier or an empty hop
    for (int h = 0; h < hops && h < 16; ++h) {
        done = done || src.empty();
        if (every_rank(ctx, done)) {
            break;
        }
        Hop hop;
        if (!sample_hop(ctx, g, done ? Ids{} : src, static_cast<long long>(fanouts[h]), hop)) {
            return 1;
        }
        done = done || hop.nodes.empty();
        if (done) {
            continue;
        }
        const std::size_t old_size = node.size();
        Ids combined = node;
        combined.insert(combined.end(), hop.nodes.begin(), hop.nodes.end());
        node = tk::unique_first(combined.data(), static_cast<long long>(combined.size()));
        src.assign(node.begin() + static_cast<long long>(std::min(old_size, node.size())), node.end());
        node_dupl.insert(node_dupl.end(), hop.nodes.begin(), hop.nodes.end());
        dst_dupl.insert(dst_dupl.end(), hop.dst.begin(), hop.dst.end());
        edge.insert(edge.end(), hop.edges.begin(), hop.edges.end());
    }
    std::unordered_map<long long, long long> assoc; // PKB's _relabel_neighborhood
    for (std::size_t i = 0; i < node.size(); ++i) {
        assoc[node[i]] = static_cast<long long>(i);
    }
    Ids row, col;
    for (std::size_t i = 0; i < node_dupl.size(); ++i) {
        row.push_back(assoc.at(node_dupl[i]));
        col.push_back(assoc.at(dst_dupl[i]));
    }
    for (const auto& [output, ids] :
         {std::pair<int, const Ids*>{0, &node}, {1, &row}, {2, &col}, {3, &edge}}) {
        if (const int rc = write_ids(ctx, output, *ids)) {
            return rc;
        }
    }
    return 0;
}
