#!/usr/bin/env python3
"""Writes the seed corpus of fuzz_safetensors into seeds/fuzz_safetensors/ (beside this script).

Usage: tests/fuzz/make_seeds_safetensors.py

Valid files of every dtype and shape kind, metadata with pkbw.values, and a few near-misses, built
with the standard library only (an implementation independent of pkbw's writer). The directory also
holds python_all_dtypes.safetensors, written by safetensors 0.8.0's save_file (PyTorch 2.11), which
this script leaves alone.
"""
import json
import pathlib
import struct

OUT = pathlib.Path(__file__).resolve().parent / "seeds" / "fuzz_safetensors"
SIZES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "F8_E4M3": 1, "F8_E5M2": 1, "I8": 1, "I16": 2,
         "I32": 4, "I64": 8, "U8": 1, "BOOL": 1, "C64": 8}


def image(tensors, metadata=None, pad=True, raw_header=None):
    """tensors: list of (name, dtype, shape, data bytes), laid out in that order."""
    header, data, offset = {}, b"", 0
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, dtype, shape, blob in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(blob)]}
        data += blob
        offset += len(blob)
    text = raw_header if raw_header is not None else json.dumps(header, separators=(",", ":")).encode()
    if pad:
        text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + data


def pattern(n):
    return bytes((i * 37 + 5) & 0xFF for i in range(n))


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    seeds = {
        "empty_header": image([]),
        "all_dtypes": image([(f"t_{d}", d, [2], pattern(2 * s)) for d, s in SIZES.items()]),
        "zero_dim_and_empty": image([("scalar", "F64", [], pattern(8)), ("rows", "BF16", [0, 4], b""),
                                     ("cols", "I32", [3, 0], b"")]),
        "values_and_metadata": image([("output_0", "F32", [2, 2], pattern(16))],
                                     {"producer": "pkbw", "pkbw.values":
                                      json.dumps({"output_1": None, "output_2": [1024, 1024]})}),
        "unpadded": image([("x", "F16", [3], pattern(6))], pad=False),
        "nested_names": image([("output_0[1]", "I64", [1], pattern(8)), ("out.k", "U8", [5], pattern(5))]),
        "overlap": image([], raw_header=b'{"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},'
                                        b'"b":{"dtype":"U8","shape":[4],"data_offsets":[2,6]}}') + pattern(6),
        "duplicate": image([], raw_header=b'{"a":{"dtype":"U8","shape":[0],"data_offsets":[0,0]},'
                                          b'"a":{"dtype":"U8","shape":[0],"data_offsets":[0,0]}}'),
        "short": b"\x10\x00\x00",
        # Regression: a number beyond double's range made nlohmann throw out_of_range, not parse_error.
        "number_overflow": image([], raw_header=b'{"a":{"dtype":"U8","shape":[1e400],"data_offsets":[0,0]}}'),
    }
    for name, blob in seeds.items():
        (OUT / f"{name}.safetensors").write_bytes(blob)
    print(f"wrote {len(seeds)} seeds to {OUT}")


if __name__ == "__main__":
    main()
