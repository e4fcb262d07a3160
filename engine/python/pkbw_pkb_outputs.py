"""PKB's Python judge: a side's outputs flattened to PKB's comparison paths (core/outputs.h), written as
safetensors (docs/formats.md) by hand so that no package beyond torch is needed, and PKB's own rule
deciding a trial (torch.allclose on .float(), rtol relative to the candidate, recursing over tuples,
lists and dicts).
"""

import json
import os
import struct


def flatten(value, name, tensors, values, torch):
    if isinstance(value, torch.Tensor):
        tensors[name] = value
    elif isinstance(value, (list, tuple)) and not isinstance(value, torch.Size):
        for i, item in enumerate(value):
            flatten(item, f"{name}[{i}]", tensors, values, torch)
    elif isinstance(value, dict):
        for key, item in value.items():
            flatten(item, f"{name}.{key}" if name else str(key), tensors, values, torch)
    else:
        values[name] = list(value) if isinstance(value, torch.Size) else value


def output_leaves(output, torch):
    """PKB saves a tuple/list as {'output_<i>': ...}; a dict as is; a tensor as the root."""
    tensors, values = {}, {}
    if isinstance(output, (list, tuple)) and not isinstance(output, torch.Size):
        for i, item in enumerate(output):
            flatten(item, f"output_{i}", tensors, values, torch)
    elif isinstance(output, dict):
        flatten(output, "", tensors, values, torch)
    else:
        flatten(output, "output", tensors, values, torch)
    return tensors, values


SAFETENSORS_DTYPES = {
    "torch.float64": "F64", "torch.float32": "F32", "torch.float16": "F16", "torch.bfloat16": "BF16",
    "torch.int64": "I64", "torch.int32": "I32", "torch.int16": "I16", "torch.int8": "I8",
    "torch.uint8": "U8", "torch.bool": "BOOL", "torch.float8_e4m3fn": "F8_E4M3",
    "torch.float8_e5m2": "F8_E5M2",
}


def write_safetensors(path, tensors, values, torch):
    header, blobs, offset = {}, [], 0
    for name, tensor in tensors.items():
        dtype = SAFETENSORS_DTYPES.get(str(tensor.dtype))
        if dtype is None:
            raise TypeError(f"output {name}: dtype {tensor.dtype} has no safetensors name")
        data = tensor.detach().contiguous().cpu().reshape(-1).view(torch.uint8).numpy().tobytes()
        header[name] = {"dtype": dtype, "shape": list(tensor.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    metadata = {"producer": "pkbw_pkb_rank"}
    if values:
        metadata["pkbw.values"] = json.dumps(values, default=str)
    header["__metadata__"] = metadata
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    temporary = f"{path}.tmp.{os.getpid()}"
    with open(temporary, "wb") as out:
        out.write(struct.pack("<Q", len(text)))
        out.write(text)
        for blob in blobs:
            out.write(blob)
    os.replace(temporary, path)


def pkb_mismatch(ref, sol, atol, rtol, torch, path="(root)"):
    """The first difference under PKB's rule (utils/problem_id.py walk_mismatch), or None."""
    if isinstance(ref, dict) and isinstance(sol, dict):
        if set(ref) != set(sol):
            return f"{path}: dict keys differ (only_in_ref={sorted(set(ref) - set(sol))} " \
                   f"only_in_sol={sorted(set(sol) - set(ref))})"
        for key in ref:
            found = pkb_mismatch(ref[key], sol[key], atol, rtol, torch, str(key) if path == "(root)" else f"{path}.{key}")
            if found:
                return found
        return None
    if isinstance(ref, (list, tuple)) and isinstance(sol, (list, tuple)) and not isinstance(ref, torch.Size):
        if len(ref) != len(sol):
            return f"{path}: sequence length ref {len(ref)} vs sol {len(sol)}"
        for i, (a, b) in enumerate(zip(ref, sol)):
            child = f"output_{i}" if path == "(root)" else f"{path}[{i}]"
            found = pkb_mismatch(a, b, atol, rtol, torch, child)
            if found:
                return found
        return None
    if isinstance(ref, torch.Tensor) and isinstance(sol, torch.Tensor):
        if ref.shape != sol.shape:
            return f"{path}: tensor shape ref {tuple(ref.shape)} vs sol {tuple(sol.shape)}"
        a, b = ref.detach().float(), sol.detach().float().to(ref.device)
        if not torch.allclose(a, b, atol=atol, rtol=rtol):
            diff = (a - b).abs()
            return f"{path}: tensors not allclose (atol={atol}, rtol={rtol}); " \
                   f"max_abs_diff={diff.max().item():.6g} mean_abs_diff={diff.mean().item():.6g}"
        return None
    try:
        same = ref == sol
        if isinstance(same, torch.Tensor):
            same = bool(same.all())
    except Exception:  # PKB: "non-tensor compare failed"
        return f"{path}: non-tensor compare failed"
    return None if same else f"{path}: values differ ({type(ref).__name__} vs {type(sol).__name__})"
