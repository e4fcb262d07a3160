"""Tensor descriptions as PKB's Python judge and its workers exchange them ({dtype, shape, stride, ...}):
layouts (contiguous, dense, the span a strided view touches), every description from the other process
checked before it is used, and views of a region's bytes as the tensors a description names (the timed
calls' slots).
"""

import re

from pkbw_channel import ProtocolError

MAX_DIMS = 64


def dtype_named(name, torch):
    if not isinstance(name, str) or not re.fullmatch(r"[a-z0-9_]{1,32}", name):
        raise ProtocolError(f"a dtype name '{str(name)[:40]}'")
    dtype = getattr(torch, name, None)
    if not isinstance(dtype, torch.dtype):
        raise ProtocolError(f"'{name}' is not a torch dtype")
    return dtype


def item_size(dtype, torch):
    return torch.empty((), dtype=dtype).element_size()


def contiguous_strides(shape):
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= max(size, 1)
    return list(reversed(strides))


def span_elements(shape, stride):
    """Elements from the first to one past the last that a strided view touches."""
    if any(size == 0 for size in shape):
        return 0
    return 1 + sum((size - 1) * step for size, step in zip(shape, stride))


def dense_layout(tensor):
    """The strides to send a tensor with: its own when it covers its span exactly once (contiguous or
    a permutation of it, like a transpose: PKB inputs keep their layout), else contiguous."""
    shape, stride = list(tensor.shape), list(tensor.stride())
    dims = sorted((step, size) for step, size in zip(stride, shape) if size != 1)
    expected = 1
    for step, size in dims:
        if step != expected:
            return contiguous_strides(shape)
        expected *= size
    return stride


def int_list(value, what):
    if not isinstance(value, list) or len(value) > MAX_DIMS or not all(type(x) is int and x >= 0 for x in value):
        raise ProtocolError(f"a tensor {what} that is not a list of at most {MAX_DIMS} non-negative integers")
    return value


def tensor_spec(spec, torch, contiguous_only):
    """(dtype, shape, stride, bytes spanned) of a description from the other process."""
    if not isinstance(spec, dict):
        raise ProtocolError("a tensor description that is not an object")
    dtype = dtype_named(spec.get("dtype"), torch)
    shape = int_list(spec.get("shape"), "shape")
    stride = int_list(spec.get("stride"), "stride")
    if len(shape) != len(stride):
        raise ProtocolError("a tensor whose shape and strides differ in length")
    if contiguous_only and stride != contiguous_strides(shape) and span_elements(shape, stride) != 0:
        raise ProtocolError("an output tensor that is not contiguous (the candidate's process sends "
                            "outputs contiguous)")
    return dtype, shape, stride, span_elements(shape, stride) * item_size(dtype, torch)


def as_bytes(tensor, torch):
    """A uint8 view of a tensor's span, in memory order (the tensor must be dense in its layout)."""
    span = span_elements(list(tensor.shape), list(tensor.stride()))
    flat = tensor.as_strided((span,), (1,)) if span else tensor.reshape(-1)
    return flat.view(torch.uint8)


def slot_view(raw, offset, spec, torch):
    """The tensor a slot description ({dtype, shape, stride, offset}) names in a uint8 region, at `offset`
    (the set's or slot's start) plus its own."""
    dtype, shape, stride, nbytes = tensor_spec(spec, torch, contiguous_only=False)
    start = offset + int(spec["offset"])
    if nbytes == 0:
        return torch.empty_strided(shape, stride, dtype=dtype, device=raw.device)
    if start < 0 or start + nbytes > raw.numel() or start % item_size(dtype, torch):
        raise ProtocolError(f"a slot of {nbytes} bytes at {start} outside its region of {raw.numel()} bytes")
    return raw[start:start + nbytes].view(dtype).as_strided(shape, stride)
