// Jagged (KeyedJaggedTensor-style) segments on the host (pkbw reference toolkit), for 70 and the other
// jagged exchanges: rows of `batch` lengths, each row's values contiguous after the previous row's.
//
//     const auto split = pkbw::tk::split_jagged(lengths, key_splits, batch);  // what goes to each rank
//     for (const pkbw::tk::SegmentMove& m : pkbw::tk::recat_feature_major(received, mine, world, batch))
//         copy row m.row (batch lengths) and values [m.value_offset, + m.value_count) to the output's end
//
// Host arithmetic only (the plans); the copies are the caller's (memcpy, or cudaMemcpyAsync per move).
#pragma once

#include <numeric>
#include <vector>

namespace pkbw::tk {

// What goes to each rank d: its splits[d] consecutive rows (length_counts, in lengths) and their values
// (value_counts, contiguous in values).
struct JaggedSplit {
    std::vector<long long> length_counts, value_counts;
};

inline JaggedSplit split_jagged(const long long* lengths, const std::vector<long long>& splits,
                                long long batch) {
    JaggedSplit out;
    long long at = 0;
    for (long long rows : splits) {
        out.length_counts.push_back(rows * batch);
        out.value_counts.push_back(std::accumulate(lengths + at, lengths + at + rows * batch, 0LL));
        at += rows * batch;
    }
    return out;
}

// One segment of a permutation: received row `row` and its values.
struct SegmentMove {
    long long row, value_offset, value_count;
};

// TorchRec's recat (stagger 1) of rows received source-major (row s * mine + f: source s, local feature
// f, `batch` lengths each): feature-major output order (for each feature, each source in order), with
// each row's value segment in the received values.
inline std::vector<SegmentMove> recat_feature_major(const long long* received, long long mine, int world,
                                                    long long batch) {
    std::vector<long long> offsets(static_cast<std::size_t>(mine * world) + 1, 0);
    for (long long r = 0; r < mine * world; ++r) {
        offsets[r + 1] = offsets[r] + std::accumulate(received + r * batch, received + (r + 1) * batch, 0LL);
    }
    std::vector<SegmentMove> moves;
    for (long long f = 0; f < mine; ++f) {
        for (int s = 0; s < world; ++s) {
            const long long row = s * mine + f;
            moves.push_back({row, offsets[row], offsets[row + 1] - offsets[row]});
        }
    }
    return moves;
}

} // namespace pkbw::tk
