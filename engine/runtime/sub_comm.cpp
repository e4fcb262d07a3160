#include "sub_comm.h"

#include "pkbw/core/error.h"

#include <algorithm>
#include <set>

namespace pkbw::engine {

std::string describe_layout(const SubCommLayout& layout) {
    switch (layout.kind) {
    case SubCommKind::Blocks:
        return "blocks(" + std::to_string(layout.value) + ")";
    case SubCommKind::Strided:
        return "strided(" + std::to_string(layout.value) + ")";
    case SubCommKind::Split:
        return "split(color " + std::to_string(layout.value) + ", key " + std::to_string(layout.key) + ")";
    }
    return "unknown layout kind " + std::to_string(static_cast<int>(layout.kind));
}

SubCommGroup sub_comm_group(const std::vector<SubCommLayout>& layouts, int rank) {
    const int world = static_cast<int>(layouts.size());
    const SubCommLayout& mine = layouts.at(static_cast<std::size_t>(rank));
    for (int r = 0; r < world; ++r) {
        const SubCommLayout& other = layouts[r];
        const bool same =
            other.kind == mine.kind && (mine.kind == SubCommKind::Split || other.value == mine.value);
        if (!same)
            throw Error("ctx.sub_comm: ranks disagree on the layout: rank " + std::to_string(rank) +
                        " asked for " + describe_layout(mine) + ", rank " + std::to_string(r) + " for " +
                        describe_layout(other));
    }
    SubCommGroup g;
    switch (mine.kind) {
    case SubCommKind::Blocks:
    case SubCommKind::Strided: {
        const int v = mine.value;
        if (v < 1 || world % v != 0)
            throw Error("ctx.sub_comm: " + describe_layout(mine) + " does not tile a world of " +
                        std::to_string(world) + " ranks (the value must divide the world size)");
        const bool blocks = mine.kind == SubCommKind::Blocks;
        const int size = blocks ? v : world / v;
        g.groups = world / size;
        g.group = blocks ? rank / v : rank % v;
        g.rank = blocks ? rank % v : rank / v;
        for (int i = 0; i < size; ++i)
            g.ranks.push_back(blocks ? g.group * v + i : g.group + i * v);
        return g;
    }
    case SubCommKind::Split: {
        std::set<int> colors;
        for (int r = 0; r < world; ++r) {
            if (layouts[r].value < 0)
                throw Error("ctx.sub_comm: rank " + std::to_string(r) + " passed " +
                            describe_layout(layouts[r]) + ": a color must be >= 0");
            colors.insert(layouts[r].value);
            if (layouts[r].value == mine.value)
                g.ranks.push_back(r);
        }
        // MPI_Comm_split's order: by key, ties by world rank (the stable sort keeps rank order).
        std::stable_sort(g.ranks.begin(), g.ranks.end(),
                         [&](int a, int b) { return layouts[a].key < layouts[b].key; });
        g.rank = static_cast<int>(std::find(g.ranks.begin(), g.ranks.end(), rank) - g.ranks.begin());
        g.group = mine.value;
        g.groups = static_cast<int>(colors.size());
        return g;
    }
    }
    throw Error("ctx.sub_comm: rank " + std::to_string(rank) + " passed " + describe_layout(mine));
}

} // namespace pkbw::engine
