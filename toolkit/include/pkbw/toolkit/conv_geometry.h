// The geometry of a dense convolution (groups = 1) over up to three spatial axes, for conv_im2col.cuh
// and its float64 twin conv_host.h (87's 2-D conv, 76's 3-D one). A 2-D convolution is depth 1 with a
// kernel, stride and padding of 1, 1 and 0 on axis 0. One index map for the device and the host:
//
//   im2col matrix [channels · taps, out_positions]: row = c · taps + (kd · kh + ih) · kw + iw (the
//   weight's [out_channels, channels, kd, kh, kw] layout read as [out_channels, channels · taps]),
//   column = (od · out_h + oh) · out_w + ow; source() is the input element it reads, or -1 for padding.
#pragma once

#ifdef __CUDACC__
#define PKBW_CONV_FN __host__ __device__ inline
#else
#define PKBW_CONV_FN inline
#endif

namespace pkbw::tk {

struct ConvGeometry {
    long long channels = 1, out_channels = 1;
    long long in[3] = {1, 1, 1};     // depth, height, width of one input image
    long long kernel[3] = {1, 1, 1}; // kd, kh, kw
    long long stride[3] = {1, 1, 1};
    long long pad[3] = {0, 0, 0}; // zeros before and after, per axis (torch's symmetric padding)
    long long dilation[3] = {1, 1, 1};

    // torch's output size: floor((in + 2 pad - dilation (kernel - 1) - 1) / stride) + 1.
    PKBW_CONV_FN long long out(int axis) const {
        return (in[axis] + 2 * pad[axis] - dilation[axis] * (kernel[axis] - 1) - 1) / stride[axis] + 1;
    }
    PKBW_CONV_FN long long out_positions() const { return out(0) * out(1) * out(2); }
    PKBW_CONV_FN long long in_positions() const { return in[0] * in[1] * in[2]; }
    PKBW_CONV_FN long long taps() const { return kernel[0] * kernel[1] * kernel[2]; }
    PKBW_CONV_FN long long col_rows() const { return channels * taps(); }

    // The input element (index into one image [channels, in...]) that im2col row `row`, column `col`
    // reads, or -1 where it falls in the padding.
    PKBW_CONV_FN long long source(long long row, long long col) const {
        const long long tap = row % taps(), c = row / taps();
        const long long k2 = tap % kernel[2], k1 = (tap / kernel[2]) % kernel[1],
                        k0 = tap / (kernel[2] * kernel[1]);
        const long long o2 = col % out(2), o1 = (col / out(2)) % out(1), o0 = col / (out(2) * out(1));
        const long long i0 = o0 * stride[0] - pad[0] + k0 * dilation[0];
        const long long i1 = o1 * stride[1] - pad[1] + k1 * dilation[1];
        const long long i2 = o2 * stride[2] - pad[2] + k2 * dilation[2];
        if (i0 < 0 || i0 >= in[0] || i1 < 0 || i1 >= in[1] || i2 < 0 || i2 >= in[2])
            return -1;
        return ((c * in[0] + i0) * in[1] + i1) * in[2] + i2;
    }
};

// A 2-D convolution (F.conv2d) as a ConvGeometry: input [channels, height, width], kernel [kh, kw].
PKBW_CONV_FN ConvGeometry conv2d_geometry(long long channels, long long out_channels, long long height,
                                          long long width, long long kh, long long kw, long long stride_h,
                                          long long stride_w, long long pad_h, long long pad_w) {
    ConvGeometry g;
    g.channels = channels;
    g.out_channels = out_channels;
    g.in[1] = height;
    g.in[2] = width;
    g.kernel[1] = kh;
    g.kernel[2] = kw;
    g.stride[1] = stride_h;
    g.stride[2] = stride_w;
    g.pad[1] = pad_h;
    g.pad[2] = pad_w;
    return g;
}

// A 3-D convolution (F.conv3d with int stride, padding and dilation, as PKB 76 passes them): input
// [channels, in[0], in[1], in[2]], kernel [kernel[0], kernel[1], kernel[2]].
PKBW_CONV_FN ConvGeometry conv3d_geometry(long long channels, long long out_channels, const long long* in,
                                          const long long* kernel, long long stride, long long pad,
                                          long long dilation) {
    ConvGeometry g;
    g.channels = channels;
    g.out_channels = out_channels;
    for (int axis = 0; axis < 3; ++axis) {
        g.in[axis] = in[axis];
        g.kernel[axis] = kernel[axis];
        g.stride[axis] = stride;
        g.pad[axis] = pad;
        g.dilation[axis] = dilation;
    }
    return g;
}

} // namespace pkbw::tk
