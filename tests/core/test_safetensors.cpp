#include "pkbw/core/error.h"
#include "pkbw/core/safetensors.h"

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

namespace pkbw {
namespace {

namespace fs = std::filesystem;
using Bytes = std::vector<std::byte>;

class SafetensorsTest : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ = fs::temp_directory_path() / ("pkbw_safetensors_" + std::to_string(::getpid()) + "_" +
                                            ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::remove_all(dir_);
        fs::create_directories(dir_);
    }
    void TearDown() override { fs::remove_all(dir_); }
    std::string path(const std::string& name) const { return (dir_ / name).string(); }

    fs::path dir_;
};

Bytes to_bytes(std::string_view text) {
    Bytes out(text.size());
    std::memcpy(out.data(), text.data(), text.size());
    return out;
}

Bytes read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    return to_bytes(text);
}

void write_file(const std::string& path, const Bytes& bytes) {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

// An image with `header` as the JSON text (not padded unless the caller pads it) and `data` after it.
Bytes image(std::string_view header, std::size_t data_bytes = 0, std::uint64_t length = UINT64_MAX) {
    if (length == UINT64_MAX)
        length = header.size();
    Bytes out;
    for (int i = 0; i < 8; ++i)
        out.push_back(static_cast<std::byte>((length >> (8 * i)) & 0xff));
    const Bytes text = to_bytes(header);
    out.insert(out.end(), text.begin(), text.end());
    for (std::size_t i = 0; i < data_bytes; ++i)
        out.push_back(static_cast<std::byte>(i));
    return out;
}

// Parses `bytes`, expecting a FormatError that starts with the source name and contains `needle`.
void expect_rejected(const Bytes& bytes, const std::string& needle) {
    try {
        parse_safetensors(bytes, "bad.safetensors");
        ADD_FAILURE() << "accepted; expected an error containing: " << needle;
    } catch (const FormatError& e) {
        const std::string message = e.what();
        EXPECT_EQ(message.rfind("bad.safetensors: ", 0), 0u) << message;
        EXPECT_NE(message.find(needle), std::string::npos)
            << "message: " << message << "\nexpected: " << needle;
    }
}

// The JSON header of a written file, to check what other readers will see.
nlohmann::ordered_json header_of(const Bytes& file) {
    std::uint64_t n = 0;
    for (int i = 7; i >= 0; --i)
        n = (n << 8) | static_cast<std::uint8_t>(file[i]);
    EXPECT_EQ(n % 8, 0u) << "header length should be padded to 8 bytes";
    return nlohmann::ordered_json::parse(reinterpret_cast<const char*>(file.data()) + 8,
                                         reinterpret_cast<const char*>(file.data()) + 8 + n);
}

Tensor patterned(DType dtype, Shape shape, int seed) {
    Tensor t = Tensor::zeros(dtype, std::move(shape));
    auto* p = reinterpret_cast<std::uint8_t*>(t.mutable_data());
    for (std::size_t i = 0; i < t.nbytes(); ++i)
        p[i] = static_cast<std::uint8_t>(i * 37 + seed * 11 + 5);
    return t;
}

TEST_F(SafetensorsTest, RoundTripsEveryDtypeAsMappedViews) {
    OutputSet outputs;
    int seed = 0;
    for (DType dtype : kAllDTypes)
        outputs.add("t_" + std::string(dtype_name(dtype)), patterned(dtype, {2, 3}, seed++));
    write_safetensors(path("all.safetensors"), outputs);

    const auto header = header_of(read_file(path("all.safetensors")));
    for (DType dtype : kAllDTypes)
        EXPECT_EQ(header["t_" + std::string(dtype_name(dtype))]["dtype"], safetensors_dtype_name(dtype));

    const SafetensorsFile file = read_safetensors(path("all.safetensors"));
    ASSERT_EQ(file.outputs.tensors.size(), outputs.tensors.size());
    for (std::size_t i = 0; i < outputs.tensors.size(); ++i) {
        const auto& [name, got] = file.outputs.tensors[i];
        EXPECT_EQ(name, outputs.tensors[i].name) << "output order must survive";
        EXPECT_EQ(got.dtype(), outputs.tensors[i].tensor.dtype());
        EXPECT_EQ(got.shape(), (Shape{2, 3}));
        EXPECT_TRUE(got.is_contiguous());
        EXPECT_TRUE(got.bitwise_equal(outputs.tensors[i].tensor)) << name;
        EXPECT_EQ(std::memcmp(got.data(), outputs.tensors[i].tensor.data(), got.nbytes()), 0) << name;
        EXPECT_EQ(got.storage()->mutable_data(), nullptr) << name << " should view the read-only mapping";
        EXPECT_EQ(reinterpret_cast<std::uintptr_t>(got.data()) % dtype_size(got.dtype()), 0u)
            << name << " is misaligned in the mapping";
    }
}

TEST_F(SafetensorsTest, WritesNonContiguousTensorsContiguously) {
    // 2x3 f32 [[0,1,2],[3,4,5]] seen transposed (3x2, strides {1,3}) and as its second column.
    auto storage = Storage::allocate(6 * sizeof(float));
    for (int i = 0; i < 6; ++i) {
        const float v = static_cast<float>(i);
        std::memcpy(storage->mutable_data() + i * sizeof(float), &v, sizeof v);
    }
    OutputSet outputs;
    outputs.add("transposed", Tensor::view(storage, DType::F32, {3, 2}, {1, 3}));
    outputs.add("column", Tensor::view(storage, DType::F32, {2}, {3}, sizeof(float)));
    ASSERT_FALSE(outputs.tensors[0].tensor.is_contiguous());
    write_safetensors(path("nc.safetensors"), outputs);

    const SafetensorsFile file = read_safetensors(path("nc.safetensors"));
    ASSERT_EQ(file.outputs.tensors.size(), 2u);
    EXPECT_EQ(file.outputs.tensors[0].tensor.shape(), (Shape{3, 2}));
    EXPECT_EQ(file.outputs.tensors[0].tensor.to_f32(), (std::vector<float>{0, 3, 1, 4, 2, 5}));
    EXPECT_EQ(file.outputs.tensors[1].tensor.to_f32(), (std::vector<float>{1, 4}));
}

TEST_F(SafetensorsTest, RoundTripsZeroDimAndEmptyTensors) {
    OutputSet outputs;
    Tensor scalar = Tensor::zeros(DType::F64, {});
    scalar.mutable_data_as<double>()[0] = 2.5;
    outputs.add("scalar", scalar);
    outputs.add("empty_rows", Tensor::zeros(DType::BF16, {0, 4}));
    outputs.add("after", Tensor::from_bytes(DType::U8, {3}, to_bytes("abc")));
    outputs.add("empty_cols", Tensor::zeros(DType::I32, {3, 0}));
    write_safetensors(path("edge.safetensors"), outputs);

    const auto header = header_of(read_file(path("edge.safetensors")));
    EXPECT_EQ(header["scalar"]["shape"], nlohmann::ordered_json::array());
    EXPECT_EQ(header["scalar"]["data_offsets"], (nlohmann::ordered_json{0, 8}));
    EXPECT_EQ(header["empty_rows"]["shape"], (nlohmann::ordered_json{0, 4}));
    EXPECT_EQ(header["empty_rows"]["data_offsets"][0], header["empty_rows"]["data_offsets"][1]);

    for (const SafetensorsFile& file :
         {read_safetensors(path("edge.safetensors")),
          parse_safetensors(read_file(path("edge.safetensors")), "edge.safetensors")}) {
        ASSERT_EQ(file.outputs.tensors.size(), 4u);
        EXPECT_EQ(file.outputs.tensors[0].name, "scalar");
        EXPECT_EQ(file.outputs.tensors[0].tensor.ndim(), 0);
        EXPECT_EQ(file.outputs.tensors[0].tensor.get_f64(0), 2.5);
        EXPECT_EQ(file.outputs.tensors[1].name, "empty_rows");
        EXPECT_EQ(file.outputs.tensors[1].tensor.shape(), (Shape{0, 4}));
        EXPECT_EQ(file.outputs.tensors[1].tensor.numel(), 0);
        EXPECT_EQ(file.outputs.tensors[2].tensor.to_f64(), (std::vector<double>{'a', 'b', 'c'}));
        EXPECT_EQ(file.outputs.tensors[3].tensor.shape(), (Shape{3, 0}));
        EXPECT_EQ(file.outputs.tensors[3].tensor.dtype(), DType::I32);
    }
}

TEST_F(SafetensorsTest, RoundTripsEmptyOutputSet) {
    write_safetensors(path("none.safetensors"), OutputSet{});
    const Bytes bytes = read_file(path("none.safetensors"));
    EXPECT_EQ(bytes.size(), 16u); // length + "{}" padded to 8
    const SafetensorsFile file = read_safetensors(path("none.safetensors"));
    EXPECT_TRUE(file.outputs.tensors.empty());
    EXPECT_TRUE(file.outputs.values.empty());
    EXPECT_TRUE(file.metadata.empty());
}

TEST_F(SafetensorsTest, MetadataAndValuesRoundTrip) {
    OutputSet outputs;
    outputs.add("output_0", Tensor::from_bytes(DType::U8, {2}, to_bytes("xy")));
    outputs.values["output_1"] = "null";
    outputs.values["output_2"] = "[1024, 1024]";
    outputs.values["output_3"] = " {\"k\": 3.5, \"s\": \"t\"} ";
    const std::map<std::string, std::string> metadata = {{"producer", "pkbw"},
                                                         {"note", "h\xc3\xa9llo \"q\""}};
    write_safetensors(path("meta.safetensors"), outputs, metadata);

    const auto header = header_of(read_file(path("meta.safetensors")));
    ASSERT_TRUE(header["__metadata__"]["pkbw.values"].is_string());
    EXPECT_EQ(header["__metadata__"]["producer"], "pkbw");

    const SafetensorsFile file = read_safetensors(path("meta.safetensors"));
    EXPECT_EQ(file.metadata, metadata) << "pkbw.values must not appear among user metadata";
    const std::map<std::string, std::string> expected = {
        {"output_1", "null"}, {"output_2", "[1024,1024]"}, {"output_3", "{\"k\":3.5,\"s\":\"t\"}"}};
    EXPECT_EQ(file.outputs.values, expected);
    ASSERT_NE(file.outputs.find("output_0"), nullptr);
}

TEST_F(SafetensorsTest, WriterRefusesWhatCannotBeStored) {
    const Tensor t = Tensor::zeros(DType::F32, {1});
    auto expect_error = [&](const OutputSet& outputs, const std::map<std::string, std::string>& metadata,
                            const std::string& needle) {
        try {
            write_safetensors(path("w.safetensors"), outputs, metadata);
            ADD_FAILURE() << "accepted; expected " << needle;
        } catch (const Error& e) {
            const std::string message = e.what();
            EXPECT_EQ(message.rfind(path("w.safetensors") + ": ", 0), 0u) << message;
            EXPECT_NE(message.find(needle), std::string::npos) << message;
        }
    };
    OutputSet dup;
    dup.add("a", t);
    dup.add("a", t);
    expect_error(dup, {}, "two tensors named \"a\"");
    OutputSet reserved;
    reserved.add("__metadata__", t);
    expect_error(reserved, {}, "\"__metadata__\" cannot be stored");
    OutputSet undefined;
    undefined.add("u", Tensor());
    expect_error(undefined, {}, "\"u\" has no data");
    OutputSet bad_value;
    bad_value.values["v"] = "[1,";
    expect_error(bad_value, {}, "value \"v\": not well-formed JSON");
    OutputSet clash;
    clash.add("a", t);
    clash.values["a"] = "1";
    expect_error(clash, {}, "value \"a\" has the name of a tensor");
    expect_error(OutputSet{}, {{"pkbw.values", "{}"}}, "reserved");
    EXPECT_FALSE(fs::exists(path("w.safetensors")));
    EXPECT_TRUE(fs::is_empty(dir_)) << "no temporary file may be left behind";

    try {
        write_safetensors(path("missing/dir/x.safetensors"), OutputSet{});
        ADD_FAILURE() << "wrote into a missing directory";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(path("missing/dir/x.safetensors")), std::string::npos)
            << e.what();
    }
}

TEST_F(SafetensorsTest, RewriteIsAtomicAndLeavesMappedReadersIntact) {
    OutputSet first;
    first.add("x", Tensor::from_bytes(DType::U8, {4}, to_bytes("1234")));
    write_safetensors(path("r.safetensors"), first);
    const SafetensorsFile old_file = read_safetensors(path("r.safetensors"));

    OutputSet second;
    second.add("x", Tensor::from_bytes(DType::U8, {2}, to_bytes("zz")));
    write_safetensors(path("r.safetensors"), second);

    EXPECT_EQ(old_file.outputs.tensors[0].tensor.to_f64(), (std::vector<double>{'1', '2', '3', '4'}));
    EXPECT_EQ(read_safetensors(path("r.safetensors")).outputs.tensors[0].tensor.to_f64(),
              (std::vector<double>{'z', 'z'}));
    EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 1);
}

// What Python's `safetensors.torch.save_file({"weight": torch.tensor([[1., -2.], [.5, 3.]],
// dtype=torch.bfloat16), "bias": torch.tensor([1.5, -.25, 2.])}, path)` writes: data ordered by
// alignment then name, header in data order, padded with spaces to a multiple of 8. (Checked byte
// for byte against safetensors 0.8.0 with PyTorch 2.11.)
TEST_F(SafetensorsTest, ReadsTheReferenceWritersByteImage) {
    const std::string json = R"({"bias":{"dtype":"F32","shape":[3],"data_offsets":[0,12]},)"
                             R"("weight":{"dtype":"BF16","shape":[2,2],"data_offsets":[12,20]}})";
    ASSERT_EQ(json.size(), 121u);
    const std::uint8_t raw[] = {
        0x80, 0, 0, 0, 0, 0, 0, 0, // header length 128, little-endian
    };
    Bytes bytes(reinterpret_cast<const std::byte*>(raw),
                reinterpret_cast<const std::byte*>(raw) + sizeof raw);
    const Bytes text = to_bytes(json + std::string(7, ' '));
    bytes.insert(bytes.end(), text.begin(), text.end());
    const std::uint8_t data[] = {
        0x00, 0x00, 0xc0, 0x3f, 0x00, 0x00, 0x80, 0xbe, 0x00, 0x00, 0x00, 0x40, // f32 1.5, -0.25, 2
        0x80, 0x3f, 0x00, 0xc0, 0x00, 0x3f, 0x40, 0x40,                         // bf16 1, -2, 0.5, 3
    };
    for (std::uint8_t b : data)
        bytes.push_back(static_cast<std::byte>(b));
    write_file(path("ref.safetensors"), bytes);

    for (const SafetensorsFile& file :
         {parse_safetensors(bytes, "ref.safetensors"), read_safetensors(path("ref.safetensors"))}) {
        ASSERT_EQ(file.outputs.tensors.size(), 2u);
        const Tensor* bias = file.outputs.find("bias");
        const Tensor* weight = file.outputs.find("weight");
        ASSERT_TRUE(bias && weight);
        EXPECT_EQ(bias->dtype(), DType::F32);
        EXPECT_EQ(bias->to_f32(), (std::vector<float>{1.5f, -0.25f, 2.0f}));
        EXPECT_EQ(weight->dtype(), DType::BF16);
        EXPECT_EQ(weight->shape(), (Shape{2, 2}));
        EXPECT_EQ(weight->to_f32(), (std::vector<float>{1.0f, -2.0f, 0.5f, 3.0f}));
        EXPECT_TRUE(file.metadata.empty());
    }

    // Our writer produces the same image for the same tensors in the same output order.
    OutputSet same;
    same.add("bias", Tensor::from_bytes(DType::F32, {3}, std::span(bytes).subspan(136, 12)));
    same.add("weight", Tensor::from_bytes(DType::BF16, {2, 2}, std::span(bytes).subspan(148, 8)));
    write_safetensors(path("ours.safetensors"), same);
    EXPECT_EQ(read_file(path("ours.safetensors")), bytes);
}

TEST_F(SafetensorsTest, CopiesTensorsThatAnotherWriterLeftUnaligned) {
    // u8 first, then f32 at data offset 1: legal, but a view would be misaligned.
    const std::string json = R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},)"
                             R"("b":{"dtype":"F32","shape":[1],"data_offsets":[1,5]}})";
    Bytes bytes = image(json + std::string((8 - json.size() % 8) % 8, ' '));
    const std::uint8_t data[] = {7, 0x00, 0x00, 0x20, 0x41}; // 7, 10.0f
    for (std::uint8_t b : data)
        bytes.push_back(static_cast<std::byte>(b));
    write_file(path("u.safetensors"), bytes);
    const SafetensorsFile file = read_safetensors(path("u.safetensors"));
    EXPECT_EQ(file.outputs.find("a")->get_f64(0), 7);
    EXPECT_EQ(file.outputs.find("b")->get_f32(0), 10.0f);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(file.outputs.find("b")->data()) % 4, 0u);
}

TEST_F(SafetensorsTest, ReadNamesThePathOfShortOrMissingFiles) {
    write_file(path("short.safetensors"), to_bytes("abc"));
    for (const std::string& name : {path("short.safetensors"), path("absent.safetensors")}) {
        try {
            read_safetensors(name);
            ADD_FAILURE() << "accepted " << name;
        } catch (const FormatError& e) {
            EXPECT_EQ(std::string(e.what()).rfind(name + ": ", 0), 0u) << e.what();
        }
    }
    try {
        read_safetensors(path("short.safetensors"));
    } catch (const FormatError& e) {
        EXPECT_NE(std::string(e.what()).find("3 bytes, shorter than the 8-byte header length"),
                  std::string::npos);
    }
}

// A header with one tensor entry `body` named "t", followed by `data_bytes` bytes.
Bytes one_entry(const std::string& body, std::size_t data_bytes = 4) {
    return image(R"({"t":)" + body + "}", data_bytes);
}

TEST(SafetensorsMalformed, LengthFieldViolationsAreRejected) {
    expect_rejected(to_bytes("12345"), "file is 5 bytes, shorter than the 8-byte header length");
    expect_rejected(Bytes{}, "file is 0 bytes");
    expect_rejected(image("", 0, 0), "header length is 0");
    expect_rejected(image("{}", 0, kSafetensorsMaxHeaderBytes + 1),
                    "header length 100000001 exceeds the limit");
    expect_rejected(image("{}", 0, 3), "header length 3 runs past the end of the file (2 bytes");
    expect_rejected(image("{}", 0, UINT64_MAX - 1), "header length 18446744073709551614 exceeds");
}

TEST(SafetensorsMalformed, HeaderJsonViolationsAreRejected) {
    expect_rejected(image(R"({"t":)"), "header: not well-formed JSON");
    expect_rejected(image(std::string("{}\0 ", 4)), "header: not well-formed JSON (NUL byte at offset 2)");
    expect_rejected(image("{\"\xff\":1}"), "header: not well-formed JSON"); // invalid UTF-8
    expect_rejected(image(R"({"t":1e400})"),
                    "header: not well-formed JSON ([json.exception.out_of_range.406]");
    expect_rejected(image("[1, 2]  "), "header is an array, not an object");
    expect_rejected(image("\"{}\""), "header is a string, not an object");
    expect_rejected(image(" {}     "), "header does not start with '{'");
    std::string deep(200, '[');
    expect_rejected(image(R"({"t":)" + deep), "JSON nested deeper than");
}

TEST(SafetensorsMalformed, EntryViolationsNameTheTensorAndField) {
    expect_rejected(one_entry("5"), "tensor \"t\": entry is a number, not an object");
    expect_rejected(one_entry("[]"), "tensor \"t\": entry is an array, not an object");
    expect_rejected(one_entry(R"({"dtype":"U8","shape":[4]})"),
                    "tensor \"t\": missing field \"data_offsets\"");
    expect_rejected(one_entry(R"({"shape":[4],"data_offsets":[0,4]})"),
                    "tensor \"t\": missing field \"dtype\"");
    expect_rejected(one_entry(R"({"dtype":"U8","data_offsets":[0,4]})"),
                    "tensor \"t\": missing field \"shape\"");
    expect_rejected(one_entry(R"({"dtype":"U8","shape":[4],"data_offsets":[0,4],"x":1})"),
                    "tensor \"t\": unknown field \"x\"");
    expect_rejected(image(R"({"":{"dtype":"U8","shape":[0],"data_offsets":[0,0]}})"),
                    "header: empty tensor name");
}

TEST(SafetensorsMalformed, DtypeViolationsAreRejected) {
    expect_rejected(one_entry(R"({"dtype":"Q4","shape":[4],"data_offsets":[0,4]})"),
                    "tensor \"t\": dtype: unknown dtype \"Q4\"");
    expect_rejected(one_entry(R"({"dtype":"u8","shape":[4],"data_offsets":[0,4]})"), "unknown dtype \"u8\"");
    expect_rejected(one_entry(R"({"dtype":1,"shape":[4],"data_offsets":[0,4]})"),
                    "tensor \"t\": dtype is a number, not a string");
}

TEST(SafetensorsMalformed, ShapeViolationsAreRejected) {
    expect_rejected(one_entry(R"({"dtype":"U8","shape":4,"data_offsets":[0,4]})"),
                    "tensor \"t\": shape is a number, not a list");
    expect_rejected(one_entry(R"({"dtype":"U8","shape":[2,-2],"data_offsets":[0,4]})"),
                    "tensor \"t\": shape[1] is -2, not a non-negative integer");
    expect_rejected(one_entry(R"({"dtype":"U8","shape":[4.0],"data_offsets":[0,4]})"),
                    "tensor \"t\": shape[0] is a non-integer number, not a non-negative integer");
    expect_rejected(one_entry(R"({"dtype":"U8","shape":["4"],"data_offsets":[0,4]})"),
                    "tensor \"t\": shape[0] is a string");
    expect_rejected(one_entry(R"({"dtype":"U8","shape":[9223372036854775808],"data_offsets":[0,4]})"),
                    "tensor \"t\": shape[0] is 9223372036854775808, larger than a dimension can be");
    expect_rejected(one_entry(R"({"dtype":"U8","shape":[4294967296,4294967296],"data_offsets":[0,4]})"),
                    "tensor \"t\": shape [4294967296, 4294967296] overflows the element count");
    expect_rejected(one_entry(R"({"dtype":"F64","shape":[2305843009213693952],"data_offsets":[0,4]})"),
                    "overflows the element count"); // fits int64, but not once multiplied by 8 bytes
    expect_rejected(one_entry(R"({"dtype":"U8","shape":[4294967296,4294967296,0],"data_offsets":[0,0]})", 0),
                    "overflows the element count"); // no elements, but strides would overflow
}

TEST(SafetensorsMalformed, DataOffsetViolationsAreRejected) {
    expect_rejected(one_entry(R"({"dtype":"U8","shape":[4],"data_offsets":[0]})"),
                    "tensor \"t\": data_offsets is a list of 1, not a list of two integers");
    expect_rejected(one_entry(R"({"dtype":"U8","shape":[4],"data_offsets":[0,4,4]})"),
                    "data_offsets is a list of 3, not a list of two integers");
    expect_rejected(one_entry(R"({"dtype":"U8","shape":[4],"data_offsets":"0,4"})"),
                    "data_offsets is a string, not a list of two integers");
    expect_rejected(one_entry(R"({"dtype":"U8","shape":[4],"data_offsets":[-1,4]})"),
                    "tensor \"t\": data_offsets[0] is a number, not a non-negative integer");
    expect_rejected(one_entry(R"({"dtype":"U8","shape":[4],"data_offsets":[0,4.5]})"),
                    "data_offsets[1] is a non-integer number");
    expect_rejected(one_entry(R"({"dtype":"U8","shape":[0],"data_offsets":[4,0]})"),
                    "tensor \"t\": data_offsets begin 4 is after end 0");
    expect_rejected(one_entry(R"({"dtype":"U8","shape":[8],"data_offsets":[0,8]})"),
                    "tensor \"t\": data_offsets end 8 is past the end of the data section (4 bytes)");
    expect_rejected(one_entry(R"({"dtype":"U8","shape":[4],"data_offsets":[0,18446744073709551615]})"),
                    "data_offsets end 18446744073709551615 is past the end");
    expect_rejected(one_entry(R"({"dtype":"F32","shape":[2],"data_offsets":[0,4]})"),
                    "tensor \"t\": data_offsets cover 4 bytes but shape [2] of F32 needs 8");
}

TEST(SafetensorsMalformed, OverlapsAndUncoveredBytesAreRejected) {
    expect_rejected(image(R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},)"
                          R"("b":{"dtype":"U8","shape":[4],"data_offsets":[2,6]}})",
                          6),
                    "tensor \"b\": data_offsets [2, 6) overlap tensor \"a\"");
    expect_rejected(image(R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},)"
                          R"("b":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}})",
                          4),
                    "overlap tensor");
    expect_rejected(image(R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},)"
                          R"("e":{"dtype":"U8","shape":[0],"data_offsets":[2,2]}})",
                          4),
                    "tensor \"e\": data_offsets [2, 2) overlap tensor \"a\"");
    expect_rejected(image(R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[2,4]}})", 4),
                    "data section bytes [0, 2) are not covered by any tensor");
    expect_rejected(image(R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}})", 4),
                    "data section bytes [2, 4) are not covered by any tensor");
    expect_rejected(image("{}", 1), "data section bytes [0, 1) are not covered");
}

TEST(SafetensorsMalformed, MetadataViolationsAreRejected) {
    expect_rejected(image(R"({"__metadata__":[]})"), "__metadata__ is an array, not an object");
    expect_rejected(image(R"({"__metadata__":{"k":1}})"),
                    "__metadata__: value of \"k\" is a number, not a string");
    expect_rejected(image(R"({"__metadata__":{"pkbw.values":"[1]"}})"),
                    "__metadata__: pkbw.values is an array, not an object");
    expect_rejected(image(R"({"__metadata__":{"pkbw.values":"{\"a\":"}})"),
                    "__metadata__: pkbw.values: not well-formed JSON");
    expect_rejected(image(R"({"__metadata__":{"pkbw.values":"{\"a\":1}\u0000x"}})"),
                    "__metadata__: pkbw.values: not well-formed JSON (NUL byte at offset 7)");
    expect_rejected(image(R"({"__metadata__":{"pkbw.values":"{\"a\":1,\"a\":2}"}})"),
                    "__metadata__: pkbw.values: duplicate key \"a\" at the top level");
    expect_rejected(image(R"({"__metadata__":{"pkbw.values":"{\"t\":1}"},)"
                          R"("t":{"dtype":"U8","shape":[0],"data_offsets":[0,0]}})"),
                    "pkbw.values: value \"t\" has the name of a tensor");
}

TEST(SafetensorsMalformed, DuplicateKeysAreRejected) {
    expect_rejected(image(R"({"a":{"dtype":"U8","shape":[0],"data_offsets":[0,0]},)"
                          R"("a":{"dtype":"U8","shape":[0],"data_offsets":[0,0]}})"),
                    "header: duplicate key \"a\" at the top level");
    expect_rejected(one_entry(R"({"dtype":"U8","dtype":"U8","shape":[4],"data_offsets":[0,4]})"),
                    "header: duplicate key \"dtype\" in \"t\"");
    expect_rejected(image(R"({"__metadata__":{"k":"1","k":"2"}})"),
                    "duplicate key \"k\" in \"__metadata__\"");
    expect_rejected(image(R"({"__metadata__":{},"__metadata__":{}})"), "duplicate key \"__metadata__\"");
}

TEST(SafetensorsMalformed, WellFormedEdgeCasesAreAccepted) {
    // Trailing whitespace padding of any JSON kind, and the entry fields in any order.
    const SafetensorsFile file = parse_safetensors(
        image("{\"t\":{\"data_offsets\":[0,4],\"shape\":[2,2],\"dtype\":\"I8\"}}\t\n \r", 4), "ok");
    ASSERT_EQ(file.outputs.tensors.size(), 1u);
    EXPECT_EQ(file.outputs.tensors[0].tensor.dtype(), DType::I8);
    EXPECT_EQ(file.outputs.tensors[0].tensor.to_f64(), (std::vector<double>{0, 1, 2, 3}));
}

} // namespace
} // namespace pkbw
