// The tiny MLP of PKB's training-step problems (40-42, 47): y = linear(relu(linear(x, W1, b1)), W2, b2)
// with an MSE (mean) loss. Its parameters travel as one flat vector in torch's
// _flatten_dense_tensors order [W1 (hidden×d_in), b1 (hidden), W2 (d_out×hidden), b2 (d_out)].
// Shared by mlp.cuh and mlp_host.h; host and device code.
#pragma once

namespace pkbw::tk {

struct MlpShape {
    long long rows = 0, d_in = 0, hidden = 0, d_out = 0;

    long long w1_offset() const { return 0; }
    long long b1_offset() const { return hidden * d_in; }
    long long w2_offset() const { return b1_offset() + hidden; }
    long long b2_offset() const { return w2_offset() + d_out * hidden; }
    long long numel() const { return b2_offset() + d_out; } // the flat parameter count
    // Offset and element count of parameter k (0: W1, 1: b1, 2: W2, 3: b2) in the flat vector: the
    // pack/unpack map between the flat vector and the four tensors.
    long long offset(int k) const {
        return k == 0 ? w1_offset() : k == 1 ? b1_offset() : k == 2 ? w2_offset() : b2_offset();
    }
    long long count(int k) const {
        return k == 0 ? hidden * d_in : k == 1 ? hidden : k == 2 ? d_out * hidden : d_out;
    }
};

} // namespace pkbw::tk
