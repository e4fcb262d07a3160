// The allowlist of the restricted unpickler (torch_pt_pickle.cpp): storage types, dtypes and the
// callables it interprets, and the names of opcodes it refuses (for messages).
#include "torch_pt_pickle.h"

namespace pkbw::torch_pt {

// Names of refused opcodes worth spelling out (the ones that build or call arbitrary objects).
const char* refused_op_name(std::uint8_t op) {
    switch (op) {
    case 'i':
        return "INST";
    case 'o':
        return "OBJ";
    case 0x81:
        return "NEWOBJ";
    case 0x92:
        return "NEWOBJ_EX";
    case 'P':
        return "PERSID";
    case 'S':
        return "STRING";
    case 'T':
        return "BINSTRING";
    case 'U':
        return "SHORT_BINSTRING";
    case 'B':
        return "BINBYTES";
    case 'C':
        return "SHORT_BINBYTES";
    case 'V':
        return "UNICODE";
    case 'I':
        return "INT";
    case 'L':
        return "LONG";
    case 'F':
        return "FLOAT";
    case 0x8b:
        return "LONG4";
    case 0x82:
        return "EXT1";
    case 0x83:
        return "EXT2";
    case 0x84:
        return "EXT4";
    case 0x8f:
        return "EMPTY_SET";
    case 0x90:
        return "ADDITEMS";
    case 0x91:
        return "FROZENSET";
    case 0x96:
        return "BYTEARRAY8";
    case 0x97:
        return "NEXT_BUFFER";
    case 0x98:
        return "READONLY_BUFFER";
    case '2':
        return "DUP";
    case '1':
        return "POP_MARK";
    case 'd':
        return "DICT";
    case 'l':
        return "LIST";
    case 'g':
        return "GET";
    case 'p':
        return "PUT";
    default:
        return nullptr;
    }
}

namespace {

struct StorageType {
    const char* name;
    DType dtype;
};
// torch.<X>Storage as written in persistent ids (typed storages, PyTorch 1.x and 2.x).
constexpr StorageType kStorageTypes[] = {
    {"FloatStorage", DType::F32},
    {"DoubleStorage", DType::F64},
    {"HalfStorage", DType::F16},
    {"BFloat16Storage", DType::BF16},
    {"LongStorage", DType::I64},
    {"IntStorage", DType::I32},
    {"ShortStorage", DType::I16},
    {"CharStorage", DType::I8},
    {"ByteStorage", DType::U8},
    {"BoolStorage", DType::Bool},
    {"ComplexFloatStorage", DType::C64},
    {"Float8_e4m3fnStorage", DType::F8E4M3},
    {"Float8_e5m2Storage", DType::F8E5M2},
    {"UntypedStorage", DType::U8},
};
// torch.<dtype> globals (the dtype argument of _rebuild_tensor_v3).
constexpr StorageType kDTypes[] = {
    {"float32", DType::F32},
    {"float", DType::F32},
    {"float64", DType::F64},
    {"double", DType::F64},
    {"float16", DType::F16},
    {"half", DType::F16},
    {"bfloat16", DType::BF16},
    {"int64", DType::I64},
    {"long", DType::I64},
    {"int32", DType::I32},
    {"int", DType::I32},
    {"int16", DType::I16},
    {"short", DType::I16},
    {"int8", DType::I8},
    {"uint8", DType::U8},
    {"bool", DType::Bool},
    {"complex64", DType::C64},
    {"cfloat", DType::C64},
    {"float8_e4m3fn", DType::F8E4M3},
    {"float8_e5m2", DType::F8E5M2},
};

const char* const kCallables[] = {
    "torch._utils._rebuild_tensor_v2",
    "torch._utils._rebuild_tensor_v3",
    "torch._utils._rebuild_parameter",
    "collections.OrderedDict",
    "torch.Size",
};

} // namespace

std::optional<DType> storage_dtype(const std::string& global) {
    for (const auto& t : kStorageTypes) {
        if (global == std::string("torch.") + t.name || global == std::string("torch.storage.") + t.name) {
            return t.dtype;
        }
    }
    return std::nullopt;
}

std::optional<DType> dtype_global(const std::string& global) {
    for (const auto& t : kDTypes) {
        if (global == std::string("torch.") + t.name) {
            return t.dtype;
        }
    }
    return std::nullopt;
}

bool allowed_global(const std::string& global) {
    for (const char* c : kCallables) {
        if (global == c) {
            return true;
        }
    }
    return storage_dtype(global) || dtype_global(global);
}

} // namespace pkbw::torch_pt
