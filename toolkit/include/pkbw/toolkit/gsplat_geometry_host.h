// PKB 61's packing on the host (the oracle and the toolkit tests): every local gaussian projected to
// every gathered camera with gsplat_geometry.h, the visible (camera, gaussian) pairs in torch.where's
// order (camera-major, gaussians ascending) grouped by the camera's owner, and the ids as PKB rewrites
// them before its all-to-all: the camera id minus the owner's first camera (local to the owner), the
// gaussian id plus the prefix sum of N_world up to the OWNER (PKB's quirk: the destination's offset,
// not the source's).
#pragma once

#include "pkbw/toolkit/gsplat_geometry.h"

#include <vector>

namespace pkbw::tk {

// The 3-D covariances [n, 9] of n gaussians (quats [n, 4], scales [n, 3], bf16 values).
template <class Real>
std::vector<Real> gsplat_covariances(const std::vector<Real>& quats, const std::vector<Real>& scales,
                                     long long n) {
    std::vector<Real> cov(static_cast<std::size_t>(n) * 9);
    for (long long i = 0; i < n; ++i)
        gsplat_covariance(quats.data() + i * 4, scales.data() + i * 3, cov.data() + i * 9);
    return cov;
}

// This rank's pairs grouped by destination rank, and the count per destination.
struct GsplatPacked {
    std::vector<GsplatRecord> records;
    std::vector<long long> counts;
};

// The local gaussians (means [n, 3], covariances [n, 9], opacities [n], colors [n, 3]) against
// `cameras` (all ranks' cameras in rank order, `cameras_per_rank` each); `n_world` is every rank's n.
template <class Real>
GsplatPacked gsplat_pack_host(const std::vector<GsplatCamera<Real>>& cameras, int cameras_per_rank,
                              const std::vector<Real>& means, const std::vector<Real>& covs,
                              const std::vector<Real>& opacities, const std::vector<Real>& colors,
                              const std::vector<long long>& n_world) {
    const long long n = static_cast<long long>(opacities.size());
    const int world = static_cast<int>(n_world.size());
    GsplatPacked out;
    out.counts.assign(static_cast<std::size_t>(world), 0);
    long long first_gaussian = 0; // sum of n_world before the destination
    for (std::size_t c = 0; c < cameras.size(); ++c) {
        const int owner = static_cast<int>(c) / cameras_per_rank;
        if (static_cast<int>(c) % cameras_per_rank == 0 && owner > 0)
            first_gaussian += n_world[static_cast<std::size_t>(owner - 1)];
        for (long long i = 0; i < n; ++i) {
            const GsplatProjection<Real> p =
                gsplat_project(means.data() + i * 3, covs.data() + i * 9, cameras[c]);
            if (!p.visible())
                continue;
            out.records.push_back(gsplat_record(p, static_cast<long long>(c) % cameras_per_rank,
                                                i + first_gaussian, opacities.data() + i,
                                                colors.data() + i * kGsplatChannels));
            ++out.counts[static_cast<std::size_t>(owner)];
        }
    }
    return out;
}

} // namespace pkbw::tk
