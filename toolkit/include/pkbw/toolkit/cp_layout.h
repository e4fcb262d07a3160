// PKB's two-axis process grids of the context-parallel problems (55, 56, 57; 74 uses the TP x CP
// one), on the ABI's sub-communicators. W = cp x n with n = min(2, W) (PKB's tp/pp/dp size), and:
//
//   TP x CP (55, 74, Megatron order tp-cp): TP groups are n consecutive ranks, CP groups ranks n apart.
//   CP x PP (56) and CP x DP (57) (orders pp-cp, cp-dp): CP groups are W/n consecutive ranks, PP/DP
//   groups ranks W/n apart.
//
// Every rank must call these at the same point (sub-communicators are collective).
#pragma once

#include "pkbw/solution.h"

namespace pkbw::tk {

// PKB's min(2, W): the size of the second axis of 55-57's grids.
inline int pkb_pair_size(int world) {
    return world < 2 ? world : 2;
}

struct CpGroups {
    SubComm cp;    // the context-parallel ring
    SubComm other; // TP, PP or DP
};

inline CpGroups tp_cp_groups(const Context& ctx, int tp_size) {
    const SubComm tp = ctx.sub_comm_blocks(tp_size);
    const SubComm cp = ctx.sub_comm_strided(tp_size);
    return {cp, tp};
}

inline CpGroups cp_major_groups(const Context& ctx, int other_size) {
    const int cp_size = ctx.world_size / other_size;
    const SubComm cp = ctx.sub_comm_blocks(cp_size);
    const SubComm other = ctx.sub_comm_strided(cp_size);
    return {cp, other};
}

} // namespace pkbw::tk
