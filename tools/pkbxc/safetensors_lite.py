"""A reader of the safetensors format that needs only torch (Debian 12 packages no `safetensors`).

The format: an 8-byte little-endian header length L, L bytes of JSON (per tensor its dtype, shape
and [begin, end) byte offsets into the data that follows; an optional "__metadata__" of strings),
then the raw little-endian tensor bytes. pkbw writes it (core/src/safetensors_write.cpp,
docs/formats.md).

float8 tensors load as torch.float8_* where torch has them (>= 2.1); on older torch they load as
uint8 codes and `decode_float8` turns them into float32 for the comparison.
"""
import json
import struct

import torch

_PLAIN = {
    "F64": torch.float64, "F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16,
    "I64": torch.int64, "I32": torch.int32, "I16": torch.int16, "I8": torch.int8, "U8": torch.uint8,
    "BOOL": torch.bool, "C64": torch.complex64, "C128": torch.complex128,
}
FLOAT8 = ("F8_E4M3", "F8_E5M2")
_FLOAT8_TORCH = {"F8_E4M3": "float8_e4m3fn", "F8_E5M2": "float8_e5m2"}


class SafetensorsError(ValueError):
    pass


def read_header(path):
    """(header dict without __metadata__, metadata dict, offset of the data) of a safetensors file."""
    with open(path, "rb") as handle:
        prefix = handle.read(8)
        if len(prefix) != 8:
            raise SafetensorsError(f"{path}: shorter than the 8-byte header length")
        (length,) = struct.unpack("<Q", prefix)
        raw = handle.read(length)
    if len(raw) != length:
        raise SafetensorsError(f"{path}: header length {length} is past the end of the file")
    try:
        header = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as error:
        raise SafetensorsError(f"{path}: header is not JSON: {error}") from None
    if not isinstance(header, dict):
        raise SafetensorsError(f"{path}: header is not a JSON object")
    metadata = header.pop("__metadata__", {}) or {}
    return header, metadata, 8 + length


def load(path, device="cpu"):
    """(dict name -> tensor, metadata dict, dict name -> safetensors dtype string)."""
    header, metadata, start = read_header(path)
    with open(path, "rb") as handle:
        handle.seek(start)
        data = bytearray(handle.read())
    tensors, dtypes = {}, {}
    for name, entry in header.items():
        try:
            dtype_name, shape, (begin, end) = entry["dtype"], list(entry["shape"]), entry["data_offsets"]
        except (KeyError, TypeError, ValueError):
            raise SafetensorsError(f"{path}: tensor '{name}' lacks dtype, shape or data_offsets") from None
        if dtype_name in _PLAIN:
            dtype = _PLAIN[dtype_name]
        elif dtype_name in FLOAT8:
            dtype = getattr(torch, _FLOAT8_TORCH[dtype_name], torch.uint8)
        else:
            raise SafetensorsError(f"{path}: tensor '{name}' has unsupported dtype {dtype_name}")
        if not 0 <= begin <= end <= len(data):
            raise SafetensorsError(f"{path}: tensor '{name}' offsets [{begin}, {end}) outside the data")
        count = 1
        for extent in shape:
            count *= extent
        item = torch.empty((), dtype=dtype).element_size()
        if end - begin != count * item:
            raise SafetensorsError(f"{path}: tensor '{name}' has {end - begin} bytes, shape {shape} "
                                   f"of {dtype_name} needs {count * item}")
        if count == 0:
            tensor = torch.empty(shape, dtype=dtype)
        else:
            tensor = torch.frombuffer(data, dtype=dtype, count=count, offset=begin).reshape(shape).clone()
        tensors[name] = tensor.to(device)
        dtypes[name] = dtype_name
    return tensors, metadata, dtypes


def decode_float8(codes, dtype_name):
    """float32 values of e4m3fn / e5m2 codes held in a uint8 tensor (torch without float8)."""
    table = torch.tensor([_decode_one(c, dtype_name) for c in range(256)], dtype=torch.float32)
    return table.to(codes.device)[codes.long()]


def _decode_one(code, dtype_name):
    sign = -1.0 if code & 0x80 else 1.0
    if dtype_name == "F8_E4M3":
        exponent, mantissa, bias, mbits = (code >> 3) & 0xF, code & 0x7, 7, 3
        if exponent == 0xF and mantissa == 0x7:
            return float("nan")
    else:
        exponent, mantissa, bias, mbits = (code >> 2) & 0x1F, code & 0x3, 15, 2
        if exponent == 0x1F:
            return sign * float("inf") if mantissa == 0 else float("nan")
    if exponent == 0:
        return sign * mantissa * 2.0 ** (1 - bias - mbits)
    return sign * (1 + mantissa / 2 ** mbits) * 2.0 ** (exponent - bias)
