// Variable-length outputs in a run folder's safetensors files (docs/formats.md): only the valid prefix
// is written, the bound and the reported length beside it in "pkbw.output_lengths", restored on reading.
#include "pkbw/core/compare.h"
#include "pkbw/core/error.h"
#include "pkbw/core/safetensors.h"

#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <unistd.h>

namespace pkbw {
namespace {

namespace fs = std::filesystem;

class SafetensorsLengthsTest : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ = fs::temp_directory_path() / ("pkbw_st_lengths_" + std::to_string(::getpid()) + "_" +
                                            ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::remove_all(dir_);
        fs::create_directories(dir_);
    }
    void TearDown() override { fs::remove_all(dir_); }
    std::string path(const std::string& name) const { return (dir_ / name).string(); }

    fs::path dir_;
};

TEST_F(SafetensorsLengthsTest, ThePrefixAndItsLengthRoundTrip) {
    OutputSet outputs;
    outputs.add("output_0", Tensor::zeros(DType::I64, {5}), OutputLength{16, 5});
    outputs.add("output_1", Tensor::zeros(DType::F32, {0, 4}), OutputLength{16, 40}); // out of range: 0 rows
    outputs.add("output_2", Tensor::zeros(DType::F32, {3}));
    write_safetensors(path("a.safetensors"), outputs, {{"producer", "pkbw"}});
    const SafetensorsFile file = read_safetensors(path("a.safetensors"));
    EXPECT_EQ(file.metadata.count("pkbw.output_lengths"), 0u) << "restored, not left among user metadata";
    ASSERT_EQ(file.outputs.lengths.size(), 2u);
    EXPECT_EQ(file.outputs.lengths.at("output_0").bound, 16);
    EXPECT_EQ(file.outputs.lengths.at("output_0").reported, 5);
    EXPECT_EQ(file.outputs.lengths.at("output_1").reported, 40);
    EXPECT_EQ(file.outputs.find("output_0")->shape(), (Shape{5}));
    EXPECT_EQ(file.outputs.find_length("output_2"), nullptr);
    // Files compared later (the GUI's run folder path) give the same verdict as the run did.
    OutputSet ref;
    ref.add("output_0", Tensor::zeros(DType::I64, {7}), OutputLength{16, 7});
    ref.add("output_1", Tensor::zeros(DType::F32, {2, 4}), OutputLength{16, 2});
    ref.add("output_2", Tensor::zeros(DType::F32, {3}));
    const OutputComparison c = compare_outputs(ref, file.outputs, CompareOptions{});
    EXPECT_EQ(c.first_error, "output_0: length 5, the reference's 7");
}

TEST_F(SafetensorsLengthsTest, ALengthThatDisagreesWithItsTensorIsRefused) {
    OutputSet outputs;
    outputs.add("output_0", Tensor::zeros(DType::I64, {5}), OutputLength{16, 6});
    EXPECT_THROW(write_safetensors(path("b.safetensors"), outputs), Error);
    EXPECT_THROW(write_safetensors(path("c.safetensors"), OutputSet{}, {{"pkbw.output_lengths", "{}"}}),
                 Error);
    // A hand-edited file: the header's length names a tensor of another row count.
    OutputSet good;
    good.add("output_0", Tensor::zeros(DType::I64, {5}), OutputLength{16, 5});
    write_safetensors(path("d.safetensors"), good);
    std::fstream file(path("d.safetensors"), std::ios::in | std::ios::out | std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    const auto at = bytes.find("\\\"length\\\":5");
    ASSERT_NE(at, std::string::npos) << bytes.substr(0, 200);
    bytes[at + 11] = '4';
    file.seekp(0);
    file.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    file.close();
    try {
        read_safetensors(path("d.safetensors"));
        FAIL() << "no error";
    } catch (const FormatError& e) {
        EXPECT_NE(std::string(e.what()).find("the tensor has 5 rows for length 4 of 16"), std::string::npos)
            << e.what();
    }
}

} // namespace
} // namespace pkbw
