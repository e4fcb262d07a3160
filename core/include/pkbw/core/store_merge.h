// `pkbw store merge A.db B.db ... --into main.db` (docs/sweeps.md "Merging stores"): copies every run
// of the inputs, with everything under it, into one store. Run ids are remapped, run folders copied
// beside the target, sweeps joined by their uuid. All or nothing: the inputs are checked first (a
// damaged or foreign file is refused before anything is written), the rows go in one transaction,
// and run folders are copied to temporary names that are renamed only after the commit.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace pkbw {

struct MergeReport {
    int runs = 0;                      // runs copied
    int sweeps = 0;                    // sweeps created in the target (others joined an existing one by uuid)
    int pairs = 0;                     // sweep pairs that gained a run
    int folders = 0;                   // run folders copied
    std::vector<std::string> warnings; // e.g. a run folder that no longer exists in the input
};

// Throws StoreError naming the input (and the run or table) on a damaged input, a schema other than
// this build's, a run already in the target (or in two inputs), a pair judged in two stores, or a
// table it does not know how to merge; the target is then as it was.
MergeReport merge_stores(const std::vector<std::filesystem::path>& inputs, const std::filesystem::path& into);

} // namespace pkbw
