// read_torch_pt against files written by real torch.save (tests/core/fixtures/make_pt_fixtures.py),
// and the refusal of hostile or broken archives built by hand.
#include "pkbw/core/error.h"
#include "pkbw/core/torch_pt.h"
#include "torch_pt_zip_writer.h"

#include <cmath>
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
using nlohmann::json;

const fs::path kFixtures = fs::path(PKBW_TORCH_PT_FIXTURES);

Bytes read_bytes(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    Bytes out(text.size());
    std::memcpy(out.data(), text.data(), text.size());
    return out;
}

json expected_all() {
    std::ifstream in(kFixtures / "expected.json");
    return json::parse(in);
}

double expected_number(const json& v) {
    if (v.is_string()) {
        const auto s = v.get<std::string>();
        return s == "nan" ? NAN : s == "inf" ? INFINITY : -INFINITY;
    }
    return v.get<double>();
}

void check_against_expected(const std::string& name, const OutputSet& out, const json& want) {
    SCOPED_TRACE(name);
    ASSERT_EQ(out.tensors.size(), want["tensors"].size());
    for (std::size_t i = 0; i < out.tensors.size(); ++i) {
        const auto& w = want["tensors"][i];
        const auto& t = out.tensors[i].tensor;
        SCOPED_TRACE(out.tensors[i].name);
        EXPECT_EQ(out.tensors[i].name, w["name"].get<std::string>());
        EXPECT_EQ(std::string(dtype_name(t.dtype())), w["dtype"].get<std::string>());
        EXPECT_EQ(t.shape(), w["shape"].get<Shape>());
        EXPECT_EQ(t.is_contiguous(), w["contiguous"].get<bool>());
        if (t.numel() > 0) { // torch reports strides of empty tensors that nothing reads
            EXPECT_EQ(t.strides(), w["strides"].get<std::vector<std::int64_t>>());
        }
        const auto& values = w["values"];
        ASSERT_EQ(static_cast<std::size_t>(t.numel()), values.size());
        for (std::int64_t k = 0; k < t.numel(); ++k) {
            if (t.dtype() == DType::I64) { // beyond 2^53: compare the integers themselves
                std::int64_t v = 0;
                std::memcpy(&v, t.element_ptr(k), sizeof v);
                EXPECT_EQ(v, values[k].get<std::int64_t>()) << "element " << k;
            } else if (is_integral(t.dtype())) {
                EXPECT_EQ(t.get_f64(k), values[k].get<double>()) << "element " << k;
            } else {
                const float want_value = static_cast<float>(expected_number(values[k]));
                const float got = t.get_f32(k);
                EXPECT_TRUE(got == want_value || (std::isnan(got) && std::isnan(want_value)))
                    << "element " << k << ": " << got << " vs " << want_value;
            }
        }
    }
    ASSERT_EQ(out.values.size(), want["values"].size());
    for (const auto& [key, value] : want["values"].items()) {
        ASSERT_TRUE(out.values.count(key)) << key;
        EXPECT_EQ(json::parse(out.values.at(key)), value) << key << ": " << out.values.at(key);
    }
}

TEST(TorchPt, EveryFixtureMatchesWhatTorchSaved) {
    const json all = expected_all();
    ASSERT_GE(all.size(), 20u);
    for (const auto& [name, want] : all.items()) {
        const auto path = (kFixtures / (name + ".pt")).string();
        check_against_expected(name, read_torch_pt(path), want);
        const Bytes bytes = read_bytes(path);
        check_against_expected(name + " (parsed from bytes)", parse_torch_pt(bytes, path), want);
    }
}

TEST(TorchPt, PkbSaveTensorNamingAndHandPickedValues) {
    const auto out = read_torch_pt((kFixtures / "pkb_tuple.pt").string());
    ASSERT_EQ(out.tensors.size(), 4u);
    EXPECT_EQ(out.tensors[0].name, "output_0");
    EXPECT_EQ(out.tensors[1].name, "output_3[0]");
    EXPECT_EQ(out.tensors[2].name, "output_3[1][0]");
    EXPECT_EQ(out.tensors[3].name, "output_3[1][1]");
    EXPECT_EQ(out.values.at("output_1"), "null");
    EXPECT_EQ(out.values.at("output_2"), "[1024,1024]");
    EXPECT_EQ(out.values.at("output_4"), "7");
    EXPECT_EQ(out.values.at("output_5"), "2.5");
    // output_0 is bf16(arange(6) reshaped 2x3): element [1][2] = 5.
    EXPECT_EQ(out.tensors[0].tensor.dtype(), DType::BF16);
    EXPECT_EQ(out.tensors[0].tensor.get_f32(5), 5.0f);
    // output_3[1][0] is base[2:4]: a view at element offset 2 of the shared 24-element storage.
    EXPECT_EQ(out.tensors[2].tensor.get_f32(0), 2.0f);
    EXPECT_EQ(out.tensors[2].tensor.byte_offset(), 8u);
}

TEST(TorchPt, ViewsKeepStridesAndShareStorage) {
    const auto out = read_torch_pt((kFixtures / "shared_storage.pt").string());
    const auto* whole = out.find("whole");
    const auto* row = out.find("row");
    const auto* col = out.find("col");
    ASSERT_TRUE(whole && row && col);
    EXPECT_EQ(whole->storage(), row->storage()); // one storage entry, read once
    EXPECT_EQ(whole->storage(), col->storage());
    EXPECT_EQ(col->strides(), std::vector<std::int64_t>{6});
    EXPECT_FALSE(col->is_contiguous());
    EXPECT_EQ(col->get_f32(3), 19.0f); // base.reshape(4, 6)[3][1]
    EXPECT_EQ(row->get_f32(0), 12.0f);
    // Read from the file: views of the read-only mapping, not copies.
    EXPECT_EQ(whole->storage()->mutable_data(), nullptr);

    const auto t = read_torch_pt((kFixtures / "transpose.pt").string());
    ASSERT_EQ(t.tensors.size(), 1u);
    EXPECT_EQ(t.tensors[0].name, "output");
    EXPECT_EQ(t.tensors[0].tensor.strides(), (std::vector<std::int64_t>{1, 6}));
    EXPECT_EQ(t.tensors[0].tensor.get_f32(1), 6.0f); // [0][1] of the transpose is base[1][0]
    EXPECT_EQ(t.tensors[0].tensor.contiguous().get_f32(4), 1.0f);
}

// ---- Hand-made pickles ----------------------------------------------------------------------------

std::string raw(std::initializer_list<int> bytes) {
    std::string s;
    for (int b : bytes) {
        s.push_back(static_cast<char>(b));
    }
    return s;
}
std::string uni(std::string_view text) {
    std::string s = "X";
    for (int i = 0; i < 4; ++i) {
        s.push_back(static_cast<char>((text.size() >> (8 * i)) & 0xFF));
    }
    return s + std::string(text);
}
std::string global(const std::string& module, const std::string& name) {
    return "c" + module + "\n" + name + "\n";
}
std::string int1(int v) {
    return raw({'K', v});
}
std::string int4(std::int64_t v) {
    std::string s = "J";
    for (int i = 0; i < 4; ++i) {
        s.push_back(static_cast<char>((static_cast<std::uint64_t>(v) >> (8 * i)) & 0xFF));
    }
    return s;
}
std::string long8(std::int64_t v) {
    std::string s = raw({0x8a, 8});
    for (int i = 0; i < 8; ++i) {
        s.push_back(static_cast<char>((static_cast<std::uint64_t>(v) >> (8 * i)) & 0xFF));
    }
    return s;
}
const std::string kProto = raw({0x80, 2});

struct TensorArgs {
    std::string key = "0";
    std::string storage_type = "FloatStorage";
    std::string numel = int1(16);
    std::string offset = int1(0);
    std::string size = int1(4) + raw({0x85});
    std::string stride = int1(1) + raw({0x85});
    std::string extra; // appended arguments (metadata)
};

// _rebuild_tensor_v2(('storage', torch.<type>, key, 'cpu', numel), offset, size, stride, False,
// OrderedDict())
std::string tensor_pickle(const TensorArgs& a) {
    return global("torch._utils", "_rebuild_tensor_v2") + "((" + uni("storage") +
           global("torch", a.storage_type) + uni(a.key) + uni("cpu") + a.numel + "tQ" + a.offset + a.size +
           a.stride + raw({0x89}) + global("collections", "OrderedDict") + ")R" + a.extra + "tR";
}

OutputSet parse_pickle(const std::string& pickle) {
    return parse_torch_pt(test::make_torch_archive(pickle), "hand.pt");
}

std::string refusal(const std::string& pickle) {
    try {
        parse_pickle(pickle);
    } catch (const FormatError& e) {
        return e.what();
    }
    return "(accepted)";
}

TEST(TorchPt, HandBuiltTensorPickleIsAccepted) {
    TensorArgs a;
    a.offset = int1(3);
    a.size = int1(2) + int1(2) + raw({0x86});
    a.stride = int1(1) + int1(4) + raw({0x86});
    const auto out = parse_pickle(kProto + tensor_pickle(a) + ".");
    ASSERT_EQ(out.tensors.size(), 1u);
    const Tensor& t = out.tensors[0].tensor;
    EXPECT_EQ(t.shape(), (Shape{2, 2}));
    EXPECT_EQ(t.get_f32(0), 3.0f);
    EXPECT_EQ(t.get_f32(1), 7.0f); // column stride 4
    EXPECT_EQ(t.get_f32(2), 4.0f);
    EXPECT_EQ(t.get_f32(3), 8.0f);
}

class TorchPtRefusal : public ::testing::Test {
protected:
    void SetUp() override {
        marker_ = fs::temp_directory_path() / ("pkbw_torch_pt_marker_" + std::to_string(::getpid()));
        fs::remove(marker_);
    }
    void TearDown() override {
        EXPECT_FALSE(fs::exists(marker_)) << "a refused pickle ran code";
        fs::remove(marker_);
    }
    std::string touch() const { return "touch " + marker_.string(); }
    fs::path marker_;
};

TEST_F(TorchPtRefusal, CodeExecutionGlobalsAreRefusedByName) {
    const auto os_system = refusal(kProto + global("os", "system") + "(" + uni(touch()) + "tR.");
    EXPECT_NE(os_system.find("hand.pt"), std::string::npos) << os_system;
    EXPECT_NE(os_system.find("refused global os.system"), std::string::npos) << os_system;

    const auto eval = refusal(kProto + global("builtins", "eval") + "(" +
                              uni("__import__('os').system('" + touch() + "')") + "tR.");
    EXPECT_NE(eval.find("refused global builtins.eval"), std::string::npos) << eval;

    // STACK_GLOBAL (protocol 4) with the name on the stack.
    const auto stacked =
        refusal(kProto + uni("posix") + uni("system") + raw({0x93}) + "(" + uni(touch()) + "tR.");
    EXPECT_NE(stacked.find("refused global posix.system"), std::string::npos) << stacked;

    const auto numpy = refusal(kProto + global("numpy.core.multiarray", "_reconstruct") + ")R.");
    EXPECT_NE(numpy.find("refused global numpy.core.multiarray._reconstruct"), std::string::npos) << numpy;

    const auto subprocess = refusal(kProto + global("subprocess", "Popen") + ")R.");
    EXPECT_NE(subprocess.find("refused global subprocess.Popen"), std::string::npos) << subprocess;
}

TEST_F(TorchPtRefusal, CallsAndOpcodesOutsideTheSubsetAreRefused) {
    // An allowed name that is not a callable here.
    EXPECT_NE(
        refusal(kProto + global("torch", "FloatStorage") + ")R.").find("refused call of torch.FloatStorage"),
        std::string::npos);
    // INST and OBJ build objects without GLOBAL: refused as opcodes.
    EXPECT_NE(refusal(kProto + "(" + uni(touch()) + "ios\nsystem\n.").find("refused opcode INST"),
              std::string::npos);
    EXPECT_NE(refusal(kProto + "(" + global("os", "system").substr(0, 0) + raw({'o'}) + ".")
                  .find("refused opcode OBJ"),
              std::string::npos);
    EXPECT_NE(refusal(kProto + ")" + ")" + raw({0x81}) + ".").find("refused opcode NEWOBJ"),
              std::string::npos);
    EXPECT_NE(refusal(kProto + raw({0xff}) + ".").find("refused opcode unknown (0xff)"), std::string::npos);
    EXPECT_NE(refusal(kProto + "}" + int1(1) + "bN.").find("refused BUILD"), std::string::npos);
    EXPECT_NE(refusal(kProto + global("collections", "OrderedDict") + "(" + uni(touch()) + "tR.")
                  .find("OrderedDict called with arguments"),
              std::string::npos);
    // Non-empty tensor metadata (conjugate / negative bits) changes what the bytes mean.
    TensorArgs meta;
    meta.extra = "}" + uni("neg") + raw({0x88}) + "s";
    EXPECT_NE(refusal(kProto + tensor_pickle(meta) + ".").find("metadata"), std::string::npos);
}

TEST(TorchPt, MalformedPicklesAreRefusedWithTheirReason) {
    EXPECT_NE(refusal(kProto + raw({'X', 0xff, 0xff, 0xff, 0xff}) + "abc.").find("runs past the end"),
              std::string::npos);
    EXPECT_NE(refusal(kProto + raw({0x8d, 0, 0, 0, 0, 0, 0, 0, 0x80}) + ".").find("runs past the end"),
              std::string::npos);
    EXPECT_NE(refusal(kProto + "N").find("ends without STOP"), std::string::npos);
    EXPECT_NE(refusal(kProto + "cos").find("no terminating newline"), std::string::npos);
    EXPECT_NE(refusal(kProto + "NN.").find("STOP with values left"), std::string::npos);
    EXPECT_NE(refusal(kProto + ".").find("STOP on an empty stack"), std::string::npos);
    EXPECT_NE(refusal(kProto + raw({'h', 9}) + ".").find("memo index 9 was never stored"), std::string::npos);
    EXPECT_NE(refusal(kProto + "Na.").find("APPEND"), std::string::npos);
    EXPECT_NE(refusal(kProto + "t.").find("TUPLE without a MARK"), std::string::npos);
    // A list that contains itself (through the memo) is refused, not recursed forever.
    EXPECT_NE(refusal(kProto + raw({']', 'q', 0, 'h', 0}) + "a.").find("nests deeper"), std::string::npos);
    // Two leaves with one name.
    TensorArgs a;
    EXPECT_NE(refusal(kProto + "}(" + uni("a.b") + tensor_pickle(a) + uni("a") + "}" + uni("b") +
                      tensor_pickle(a) + "su.")
                  .find("two outputs are both named 'a.b'"),
              std::string::npos);
}

TEST(TorchPt, StorageReferencesAreChecked) {
    TensorArgs key;
    key.key = "7";
    EXPECT_NE(
        refusal(kProto + tensor_pickle(key) + ".").find("storage key '7' has no entry 'archive/data/7'"),
        std::string::npos);
    TensorArgs numel;
    numel.numel = int1(17);
    EXPECT_NE(
        refusal(kProto + tensor_pickle(numel) + ".").find("holds 64 bytes, but its storage is 17 elements"),
        std::string::npos);
    TensorArgs reach;
    reach.offset = int1(14);
    EXPECT_NE(refusal(kProto + tensor_pickle(reach) + ".").find("reaches element 17 of a storage of 16"),
              std::string::npos);
    TensorArgs overflow;
    overflow.stride = long8(std::int64_t{1} << 62) + raw({0x85});
    EXPECT_NE(refusal(kProto + tensor_pickle(overflow) + ".").find("overflow"), std::string::npos);
    TensorArgs negative;
    negative.stride = int4(-1) + raw({0x85});
    EXPECT_NE(refusal(kProto + tensor_pickle(negative) + ".").find("negative size or stride"),
              std::string::npos);
    TensorArgs type;
    type.storage_type = "ComplexDoubleStorage";
    EXPECT_NE(refusal(kProto + tensor_pickle(type) + ".").find("refused global torch.ComplexDoubleStorage"),
              std::string::npos);
    TensorArgs bf16; // 16 bf16 elements need 32 bytes; entry "1" holds 16
    bf16.key = "1";
    bf16.storage_type = "BFloat16Storage";
    EXPECT_NE(refusal(kProto + tensor_pickle(bf16) + ".").find("holds 16 bytes"), std::string::npos);
}

std::string archive_refusal(const Bytes& bytes) {
    try {
        parse_torch_pt(bytes, "zip.pt");
    } catch (const FormatError& e) {
        return e.what();
    }
    return "(accepted)";
}

TEST(TorchPt, ZipContainerIsChecked) {
    const std::string pickle = kProto + "N.";
    EXPECT_NE(
        archive_refusal(test::make_zip({{"archive/data.pkl", pickle, 8}})).find("is compressed (method 8)"),
        std::string::npos);
    EXPECT_NE(archive_refusal(test::make_zip({{"foo", "bar"}})).find("no '<archive>/data.pkl'"),
              std::string::npos);
    EXPECT_NE(
        archive_refusal(test::make_zip({{"a/data.pkl", pickle}, {"b/data.pkl", pickle}})).find("two pickles"),
        std::string::npos);
    EXPECT_NE(archive_refusal(test::make_zip({{"archive/data.pkl", pickle}, {"archive/byteorder", "big"}}))
                  .find("only little-endian"),
              std::string::npos);
    EXPECT_EQ(
        archive_refusal(test::make_zip({{"archive/data.pkl", pickle}, {"archive/byteorder", "little"}})),
        "(accepted)");
    // A legacy (pre-1.6) torch.save file is a bare pickle stream, not a zip.
    Bytes legacy(64, std::byte{0x80});
    EXPECT_NE(archive_refusal(legacy).find("not a zip archive"), std::string::npos);

    // A flipped byte in a real file's tensor data fails the CRC, naming the entry.
    const auto path = kFixtures / "f32.pt";
    Bytes bytes = read_bytes(path);
    const auto good = parse_torch_pt(bytes, "f32.pt");
    const std::byte* data = good.tensors[0].tensor.data();
    const std::byte* found = std::search(bytes.data(), bytes.data() + bytes.size(), data, data + 24);
    ASSERT_NE(found, bytes.data() + bytes.size());
    bytes[static_cast<std::size_t>(found - bytes.data())] ^= std::byte{1};
    EXPECT_NE(archive_refusal(bytes).find("'f32/data/0' fails its CRC-32 check"), std::string::npos);
}

TEST(TorchPt, ZipEntriesAreCheckedOneByOne) {
    // The central directory's own checks, each on an archive edited after it was written: the end
    // record sits in the last 22 bytes, the directory at the offset it names.
    const std::string pickle = kProto + "N.";
    const Bytes good = test::make_zip({{"archive/data.pkl", pickle}});
    const std::size_t end = good.size() - 22;
    auto u32 = [](const Bytes& b, std::size_t at) {
        std::uint32_t v = 0;
        for (int i = 3; i >= 0; --i)
            v = (v << 8) | std::to_integer<std::uint32_t>(b[at + static_cast<std::size_t>(i)]);
        return v;
    };
    const std::size_t central = u32(good, end + 16);
    ASSERT_EQ(archive_refusal(good), "(accepted)");

    Bytes encrypted = good; // general-purpose flag bit 0
    encrypted[central + 8] |= std::byte{1};
    EXPECT_NE(archive_refusal(encrypted).find("zip entry 'archive/data.pkl' is encrypted"),
              std::string::npos);

    Bytes many = good; // 1000 entries claimed in a directory that holds one
    many[end + 10] = std::byte{0xE8};
    many[end + 11] = std::byte{0x03};
    EXPECT_NE(archive_refusal(many).find("zip claims 1000 entries in a"), std::string::npos);

    Bytes renamed = good; // the local header's copy of the name differs from the directory's
    renamed[30] = std::byte{'X'};
    EXPECT_NE(archive_refusal(renamed).find("'archive/data.pkl': local header names a different entry"),
              std::string::npos);

    Bytes moved = good; // the directory's offset of the local header points past its signature
    moved[central + 42] = std::byte{1};
    EXPECT_NE(archive_refusal(moved).find("has no local header at offset 1"), std::string::npos);

    EXPECT_NE(archive_refusal(test::make_zip({{"archive/data.pkl", pickle}, {"archive/data.pkl", pickle}}))
                  .find("zip entry 'archive/data.pkl' appears twice"),
              std::string::npos);
}

TEST(TorchPt, EveryTruncationOfARealFileIsRefusedCleanly) {
    const Bytes bytes = read_bytes(kFixtures / "pkb_tuple.pt");
    for (std::size_t n = 0; n < bytes.size(); ++n) {
        EXPECT_THROW(parse_torch_pt(std::span(bytes.data(), n), "cut.pt"), FormatError) << n << " bytes";
    }
}

TEST(TorchPt, RandomMutationsOfAPickleNeverEscapeAsOtherErrors) {
    TensorArgs a;
    const std::string base = kProto + "}(" + uni("x") + tensor_pickle(a) + uni("s") +
                             global("torch", "Size") + "(" + int1(2) + int1(3) + "t" + raw({0x85}) + "R" +
                             uni("l") + "](" + "N" + int1(1) + "eu.";
    ASSERT_EQ(parse_pickle(base).tensors.size(), 1u);
    std::uint64_t state = 0x9E3779B97F4A7C15ull;
    int accepted = 0;
    for (int iteration = 0; iteration < 20000; ++iteration) {
        std::string p = base;
        const int edits = 1 + static_cast<int>(state % 4);
        for (int e = 0; e < edits; ++e) {
            state ^= state << 13, state ^= state >> 7, state ^= state << 17;
            p[state % p.size()] = static_cast<char>(state >> 56);
        }
        try {
            parse_pickle(p);
            ++accepted;
        } catch (const Error&) {
        } catch (const std::exception& e) {
            FAIL() << "iteration " << iteration << ": escaped as " << typeid(e).name() << ": " << e.what();
        }
    }
    EXPECT_LT(accepted, 20000);
}

TEST(TorchPt, MissingFileNamesThePath) {
    try {
        read_torch_pt("/nonexistent/rank_0.pt");
        FAIL();
    } catch (const FormatError& e) {
        EXPECT_NE(std::string(e.what()).find("/nonexistent/rank_0.pt"), std::string::npos);
    }
}

} // namespace
} // namespace pkbw
