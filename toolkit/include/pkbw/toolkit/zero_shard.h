// How PKB 41 (ZeRO-1) and 42 (ZeRO-2) sum the flat gradient over ranks, for zero_shard.cuh and
// zero_shard_host.h (pkbw reference toolkit).
#pragma once

namespace pkbw::tk {

enum class GradientSum {
    AllReduce,     // ZeRO-1: the whole gradient all-reduced, then this rank's slice taken
    ReduceScatter, // ZeRO-2: only this rank's slice summed
};

} // namespace pkbw::tk
