#include "pkbw/core/error.h"
#include "pkbw/core/tensor.h"

#include <cstdio>
#include <fstream>
#include <gtest/gtest.h>

using namespace pkbw;

TEST(Tensor, ZerosAndShape) {
    Tensor t = Tensor::zeros(DType::BF16, {2, 3});
    EXPECT_EQ(t.numel(), 6);
    EXPECT_EQ(t.nbytes(), 12u);
    EXPECT_TRUE(t.is_contiguous());
    EXPECT_EQ(t.strides(), (std::vector<std::int64_t>{3, 1}));
    EXPECT_EQ(t.describe(), "bf16[2, 3]");
    EXPECT_EQ(Tensor::zeros(DType::F32, {}).numel(), 1);
    EXPECT_EQ(Tensor::zeros(DType::F32, {4, 0}).numel(), 0);
    EXPECT_THROW(Tensor::zeros(DType::F32, {-1}), Error);
}

TEST(Tensor, TransposedViewReadsInLogicalOrder) {
    // A 2x3 row-major matrix [[0,1,2],[3,4,5]] viewed as its 3x2 transpose.
    Tensor base = Tensor::zeros(DType::F32, {2, 3});
    for (int i = 0; i < 6; ++i) {
        base.mutable_data_as<float>()[i] = static_cast<float>(i);
    }
    Tensor t = Tensor::view(base.storage(), DType::F32, {3, 2}, {1, 3});
    EXPECT_FALSE(t.is_contiguous());
    EXPECT_EQ(t.to_f32(), (std::vector<float>{0, 3, 1, 4, 2, 5}));
    Tensor c = t.contiguous();
    EXPECT_TRUE(c.is_contiguous());
    EXPECT_EQ(c.to_f32(), t.to_f32());
    EXPECT_TRUE(c.bitwise_equal(t));
}

TEST(Tensor, ViewOutsideStorageIsRejected) {
    auto storage = Storage::allocate(16);
    EXPECT_NO_THROW(Tensor::view(storage, DType::F32, {4}, {1}));
    EXPECT_THROW(Tensor::view(storage, DType::F32, {5}, {1}), Error);
    EXPECT_THROW(Tensor::view(storage, DType::F32, {2}, {1}, 12), Error);
    EXPECT_THROW(Tensor::view(storage, DType::F32, {2}, {1, 1}), Error);
}

TEST(Tensor, MappedFileIsReadOnly) {
    const std::string path = ::testing::TempDir() + "pkbw_tensor_map.bin";
    {
        std::ofstream out(path, std::ios::binary);
        const float values[2] = {1.5f, -2.0f};
        out.write(reinterpret_cast<const char*>(values), sizeof(values));
    }
    Tensor t = Tensor::view(Storage::map_file(path), DType::F32, {2}, {1});
    EXPECT_EQ(t.get_f32(1), -2.0f);
    EXPECT_THROW(t.mutable_data(), Error);
    std::remove(path.c_str());
    EXPECT_THROW(Storage::map_file(path), Error);
}

TEST(Tensor, EmptyTensorsAreContiguousAndWritable) {
    Tensor t = Tensor::zeros(DType::I32, {3, 0});
    EXPECT_TRUE(t.is_contiguous());
    EXPECT_NO_THROW(t.mutable_data());
    EXPECT_EQ(t.contiguous().numel(), 0);
    EXPECT_EQ(t.clone().numel(), 0);
    // Huge dimensions around a zero: strides saturate instead of overflowing.
    EXPECT_EQ(Tensor::zeros(DType::F32, {1ll << 32, 1ll << 32, 0}).numel(), 0);
}
