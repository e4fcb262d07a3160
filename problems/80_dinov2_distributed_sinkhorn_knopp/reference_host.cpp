// Host oracle for PKB problem 80: the same sequence of normalisations in double (PKB's are fp32;
// each fp32 division rounds by at most 2^-24 relative, far inside the tolerance), with the
// all-reduces as the toolkit's host all-reduce. Q is kept in the input's [B, P] layout
// (PKB's transpose is only a view until the final .contiguous()).
#include "pkbw/solution.h"
#include "pkbw/toolkit/host.h"

#include <vector>

namespace tk = pkbw::tk;

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
    scalars = tk::all_reduce_sum_f64(ctx, scalars);
    const double total_batch = scalars[0], total_mass = scalars[1];
    for (double& v : q) {
        v /= total_mass;
    }
    std::vector<double> proto_sum;
    for (int it = 0; it < iterations; ++it) {
        proto_sum = tk::all_reduce_sum_f64(ctx, tk::column_sums_f64(q, batch, protos));
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
