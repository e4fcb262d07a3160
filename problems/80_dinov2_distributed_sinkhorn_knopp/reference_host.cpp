// Host oracle for PKB problem 80: the same sequence of normalisations in double (PKB's are fp32;
// each fp32 division rounds by at most 2^-24 relative, far inside the tolerance), with the
// all-reduces as host all-gathers summed in rank order. Q is kept in the input's [B, P] layout
// (PKB's transpose is only a view until the final .contiguous()).
#include "pkbw/solution.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace {

// Sums `values` over all ranks, element-wise, in rank order.
void all_reduce_sum(const pkbw::Context& ctx, std::vector<double>& values) {
    std::vector<double> all(values.size() * ctx.world_size);
    ctx.all_gather_host(values.data(), values.size() * sizeof(double), all.data());
    for (std::size_t i = 0; i < values.size(); ++i) {
        double s = 0;
        for (int r = 0; r < ctx.world_size; ++r) {
            s += all[r * values.size() + i];
        }
        values[i] = s;
    }
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& t = ctx.input(0);
    if (t.dtype != pkbw::DType::F32) {
        return ctx.fail("80 host oracle: teacher_output must be f32");
    }
    const std::int64_t batch = t.shape[0], protos = t.shape[1];
    const double temp = ctx.param("teacher_temp", 0.07);
    const int iterations = static_cast<int>(ctx.param("n_iterations", 3));
    const float* in = t.as<const float>();
    std::vector<double> q(static_cast<std::size_t>(batch * protos));
    std::vector<double> scalars = {static_cast<double>(ctx.input(1).as<const std::int64_t>()[0]), 0.0};
    for (std::size_t i = 0; i < q.size(); ++i) {
        q[i] = std::exp(static_cast<double>(in[i]) / temp);
        scalars[1] += q[i];
    }
    all_reduce_sum(ctx, scalars);
    const double total_batch = scalars[0], total_mass = scalars[1];
    for (double& v : q) {
        v /= total_mass;
    }
    std::vector<double> proto_sum(static_cast<std::size_t>(protos));
    for (int it = 0; it < iterations; ++it) {
        std::fill(proto_sum.begin(), proto_sum.end(), 0.0);
        for (std::int64_t b = 0; b < batch; ++b) {
            for (std::int64_t p = 0; p < protos; ++p) {
                proto_sum[p] += q[b * protos + p];
            }
        }
        all_reduce_sum(ctx, proto_sum);
        for (std::int64_t b = 0; b < batch; ++b) {
            double sample_sum = 0;
            double* row = q.data() + b * protos;
            for (std::int64_t p = 0; p < protos; ++p) {
                row[p] /= proto_sum[p] * static_cast<double>(protos);
                sample_sum += row[p];
            }
            for (std::int64_t p = 0; p < protos; ++p) {
                row[p] /= sample_sum * total_batch;
            }
        }
    }
    float* out = ctx.output(0).as<float>();
    for (std::size_t i = 0; i < q.size(); ++i) {
        out[i] = static_cast<float>(q[i] * total_batch);
    }
    return 0;
}
