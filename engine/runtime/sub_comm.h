// The groups of ctx.sub_comm (solution ABI, docs/solution-abi.md "Sub-communicators"): which world
// ranks a layout puts together, checked against what every rank asked for.
#pragma once

#include "pkbw/solution.h"

#include <string>
#include <vector>

namespace pkbw::engine {

struct SubCommGroup {
    std::vector<int> ranks; // world ranks in group order
    int rank = 0;           // the caller's index in `ranks`
    int group = 0;          // Blocks: rank / size; Strided: rank % stride; Split: the color
    int groups = 0;         // groups in the layout
};

// The group of world rank `rank`, given the layout every rank passed (`layouts[r]` is rank r's, as
// gathered). Throws pkbw::Error naming the rank and the layout when they disagree (kind, or the value
// of Blocks/Strided), when the value does not tile the world, or when a color is negative.
SubCommGroup sub_comm_group(const std::vector<SubCommLayout>& layouts, int rank);

// "blocks(4)", "strided(2)", "split(color 1, key 0)": the cache key of a layout, and its name in errors.
std::string describe_layout(const SubCommLayout& layout);

} // namespace pkbw::engine
