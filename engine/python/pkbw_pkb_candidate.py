#!/usr/bin/env python3
"""pkbw's candidate process for ParallelKernelBench (PKB) Python solutions.

pkbw_pkb_rank.py, the judge, starts one of these per rank (through the optional wrapper prefix,
docs/pkb-interop.md). It is the only process that imports the candidate's module, so the candidate's
code never shares an address space with PKB's reference, the pristine inputs, the comparison or the
launcher's control pipe. It inherits no control pipe and no rendezvous token; it talks to its judge
over one Unix socket (--channel-fd) and to the other ranks' candidates over a torch.distributed
process group of its own, since PKB solutions call collectives and symmetric memory themselves.

The same program, with PKB's reference loaded instead, is the reference's timing worker in perf runs
(trusted, in a process group of its own): both sides' timed calls run in a worker, by the same code
(Timing), and the judge only measures. The judge imports this file too, for what both ends must agree
on: the message framing, the encoding of values, the tensor transports and the slots' views.

Trust runs one way. The candidate process trusts its judge (the judge's inputs may hold pickled
objects, such as PKB's nn.Linear modules, whose tensors travel apart); the judge trusts nothing the
candidate process sends: its messages are JSON (never pickle), every tensor description is checked
against the memory it names, and host tensors come back in sealed memfds that the candidate can no
longer change.
"""

import argparse
import array
import base64
import contextlib
import ctypes
import datetime
import fcntl
import gc
import importlib.util
import io
import json
import mmap
import numbers
import os
import pickle
import re
import shutil
import signal
import socket
import struct
import sys
import tempfile
import time
import traceback
import types
import warnings

import pkbw_cuda_errors

# Replies larger than this are refused by the judge (a flood, not an output description: tensor
# bytes travel in memfds or CUDA memory, not in messages).
MAX_MESSAGE_BYTES = 64 << 20
MAX_FDS = 8
MAX_DEPTH = 64
MAX_DIMS = 64
ALIGN = 64
HEADER = struct.Struct("<Q")
STORE_TIMEOUT = datetime.timedelta(seconds=300)  # the launcher's rendezvous deadline is shorter
PR_SET_PDEATHSIG = 1


class ChannelClosed(Exception):
    """The other end closed the socket (its process ended)."""


class ProtocolError(Exception):
    """A message that breaks the channel's rules; the text says which rule."""


def die_with_parent():
    """SIGKILL when the process (thread) that started this one ends: no candidate outlives its judge."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


# ---------------------------------------------------------------------------------------------------
# Framing: an 8-byte little-endian length, then that many bytes of JSON; file descriptors (memfds of
# host tensors) ride on the message's first bytes as SCM_RIGHTS.

class Channel:
    def __init__(self, sock, limit=MAX_MESSAGE_BYTES):
        self.sock = sock
        self.limit = limit

    def fileno(self):
        return self.sock.fileno()

    def send(self, message, fds=()):
        body = json.dumps(message, allow_nan=True, separators=(",", ":")).encode()
        data = memoryview(HEADER.pack(len(body)) + body)
        ancillary = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))] if fds else []
        sent = self.sock.sendmsg([data], ancillary)
        if sent < len(data):
            self.sock.sendall(data[sent:])

    def _read(self, count, fds):
        chunks, got = [], 0
        while got < count:
            if fds is not None:
                data, received, flags, _ = socket.recv_fds(self.sock, count - got, MAX_FDS)
                fds.extend(received)
                if flags & socket.MSG_CTRUNC:
                    raise ProtocolError(f"more than {MAX_FDS} file descriptors on one message")
            else:
                data = self.sock.recv(min(count - got, 1 << 20))
            if not data:
                raise ChannelClosed()
            chunks.append(data)
            got += len(data)
        return b"".join(chunks)

    def recv(self):
        """(message, fds). The caller owns the fds (and must close those it does not keep)."""
        fds = []
        try:
            (length,) = HEADER.unpack(self._read(HEADER.size, fds))
            if length > self.limit:
                raise ProtocolError(f"a message of {length} bytes (the limit is {self.limit})")
            body = self._read(length, None)
            try:
                message = json.loads(body)
            except (ValueError, RecursionError) as error:
                raise ProtocolError(f"a message that is not JSON: {error}") from None
            if not isinstance(message, dict):
                raise ProtocolError("a message that is not a JSON object")
            return message, fds
        except BaseException:
            close_fds(fds)
            raise


def close_fds(fds):
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass


# ---------------------------------------------------------------------------------------------------
# Values: inputs and outputs as a JSON tree whose tensor leaves index a list of tensor descriptions.
# Tuples, lists, dicts, torch.Size and plain scalars keep their types, so the judge's PKB comparison
# (walk_mismatch) and output naming see exactly what the solution returned.
#
# Inputs (the judge to a worker, never the other way) may hold more: whatever PKB's create_input_tensor
# returns (docs/pkb-interop.md, "What crosses"). Those values travel as two more kinds of node, written
# by an InputEncoder in the judge and read by an InputDecoder in the worker only; decode_value without
# a decoder (the judge reading a worker's reply) refuses both:
#   {"x": id}  a leaf rebuilt in the worker from its id (InputEncoder.leaf): a Parameter, a tensor that
#              requires grad, a sparse COO tensor, a process group, a torch.Generator;
#   {"o": {"type", "pickle"}}  any other object (an nn.Module such as PKB's nn.Linear, a dataclass, a
#              named tuple), pickled in the judge with every leaf above and every tensor replaced by its
#              id: the tensors themselves cross as all tensors do (memfd, CUDA buffers, slots), never in
#              the pickle. The worker trusts its judge; the judge never unpickles.

def encode_value(value, torch, tensor, path="output", depth=0, inputs=None):
    """tensor(t, path) -> index of its description. inputs: the judge's InputEncoder when the value is
    a worker's input, else None. Raises TypeError naming the path."""
    if depth > MAX_DEPTH:
        raise TypeError(f"{path}: nested deeper than {MAX_DEPTH} levels")
    if inputs is not None:
        leaf = inputs.leaf(value, path)
        if leaf is not None:
            return {"x": leaf}
    if isinstance(value, torch.Tensor):
        return {"t": tensor(value, path)}
    if isinstance(value, torch.Size):
        return {"z": [int(x) for x in value]}
    if isinstance(value, bool):
        return {"b": value}
    if value is None:
        return {"n": None}
    if isinstance(value, str):
        return {"s": value}
    if isinstance(value, numbers.Integral):
        return {"i": int(value)}
    if isinstance(value, numbers.Real):
        return {"f": float(value)}
    if isinstance(value, torch.dtype):
        return {"y": str(value).split(".")[-1]}
    if isinstance(value, torch.device):
        return {"v": str(value)}
    # An input of a container's subclass (a named tuple, an OrderedDict) keeps its type: pickled below.
    plain = inputs is None or type(value) in (list, tuple, dict)
    # Paths as PKB names outputs (core/outputs.h): a top-level tuple's items are output_<i>, a
    # top-level dict's entries their keys.
    top = depth == 0 and path == "output"
    if isinstance(value, (list, tuple)) and plain:
        items = [encode_value(x, torch, tensor, f"output_{i}" if top else f"{path}[{i}]", depth + 1, inputs)
                 for i, x in enumerate(value)]
        return {"u" if isinstance(value, tuple) else "l": items}
    if isinstance(value, dict) and plain:
        pairs = []
        for key, item in value.items():
            if not isinstance(key, (str, int, float, bool)) and key is not None:
                raise TypeError(f"{path}: a dict key of type {type(key).__name__}")
            pairs.append([encode_value(key, torch, tensor, path, depth + 1, inputs),
                          encode_value(item, torch, tensor, str(key) if top else f"{path}.{key}", depth + 1,
                                       inputs)])
        return {"d": pairs}
    if inputs is not None:
        return {"o": inputs.pickled(value, path)}
    raise TypeError(f"{path}: a value of type {type(value).__name__} cannot cross between the "
                    "candidate's process and the judge (tensors, tuples, lists, dicts, torch.Size, "
                    "numbers, strings and None can)")


def type_name(value):
    kind = type(value)
    module = getattr(kind, "__module__", "") or ""
    return kind.__qualname__ if module == "builtins" else f"{module}.{kind.__qualname__}"


# Modules a worker does not have (the judge's reference, the candidate's module, the judge's own
# script): a class or function of theirs cannot be rebuilt there.
NOT_IN_WORKERS = ("pkbw_pkb_reference", "solution_mod", "__main__")


class InputEncoder:
    """The judge's side of inputs beyond tensors and plain values. tensor(t, path) is the send's own
    (the memfd, the CUDA buffers, the slots): every tensor, inside a module too, travels by it."""

    def __init__(self, torch, tensor):
        self.torch, self.tensor = torch, tensor
        self.dist = getattr(torch, "distributed", None)
        self.group_type = getattr(self.dist, "ProcessGroup", None) if self.dist is not None else None

    def leaf(self, value, path, plain_tensors=False):
        """The id (a tuple) of a value that is rebuilt in the worker from it, or None. A tensor that needs
        nothing but its bytes is None unless plain_tensors (inside a pickle, every tensor has an id)."""
        torch = self.torch
        if isinstance(value, torch.Tensor):
            grad = bool(value.requires_grad)
            if value.layout == torch.sparse_coo:
                value = value.detach()
                return ("sc", self.tensor(value._indices(), f"{path}.indices"),
                        self.tensor(value._values(), f"{path}.values"), tuple(int(x) for x in value.shape),
                        bool(value.is_coalesced()), grad)
            if value.layout != torch.strided:
                raise TypeError(f"{path}: a {value.layout} tensor cannot cross between the judge and the "
                                "worker (strided and sparse COO tensors can)")
            if isinstance(value, torch.nn.Parameter):
                return ("p", self.tensor(value, path), grad)
            if grad or plain_tensors:
                return ("t", self.tensor(value, path), grad)
            return None
        if self.group_type is not None and isinstance(value, self.group_type):
            return ("g", self.group_ranks(value, path))
        generator = getattr(torch, "Generator", None)
        if generator is not None and isinstance(value, generator):
            state = bytes(value.get_state().tolist())
            return ("G", str(value.device), base64.b64encode(state).decode())
        return None

    def group_ranks(self, group, path):
        """"world" for the default group, else the group's global ranks (sorted, as dist.new_group
        keeps them)."""
        dist = self.dist
        if group is dist.group.WORLD:
            return "world"
        try:
            ranks = dist.get_process_group_ranks(group)
        except Exception as error:  # noqa: BLE001 - any failure: the group cannot be named
            raise TypeError(f"{path}: a process group whose ranks cannot be read ({error})") from None
        return tuple(sorted(int(r) for r in ranks))

    def pickled(self, value, path):
        """An object as a pickle whose leaves and tensors are ids (the "o" node's body)."""
        encoder, ids = self, {}
        names = {}
        try:  # an nn.Module's tensors by their names (input[3].weight), for the messages
            try:
                named = list(value.named_parameters(remove_duplicate=False))
            except TypeError:  # torch before 2.0
                named = list(value.named_parameters())
            names = {id(t): f"{path}.{name}" for name, t in named + list(value.named_buffers())}
        except Exception:  # noqa: BLE001 - not a module: numbered names
            pass

        class Pickler(pickle.Pickler):
            def persistent_id(self, obj):
                key = id(obj)
                if key in ids:
                    return ids[key]
                if isinstance(obj, (type, types.FunctionType)) and getattr(obj, "__module__", None) in NOT_IN_WORKERS:
                    raise TypeError(encoder.refusal(value, path, f"it needs {obj.__module__}.{obj.__qualname__}, "
                                                                 "which a worker cannot import"))
                name = names.get(key, f"{path}<{len(ids)}>")
                leaf = encoder.leaf(obj, name, plain_tensors=True)
                if leaf is not None:
                    ids[key] = leaf
                return leaf

        buffer = io.BytesIO()
        try:
            Pickler(buffer, protocol=4).dump(value)
        except TypeError as error:
            if str(error).startswith(path):
                raise
            raise TypeError(self.refusal(value, path, self.failed(error))) from None
        except Exception as error:  # noqa: BLE001 - pickling raises many kinds
            raise TypeError(self.refusal(value, path, self.failed(error))) from None
        return {"type": type_name(value), "pickle": base64.b64encode(buffer.getvalue()).decode()}

    @staticmethod
    def failed(error):
        return f"pickling it (its tensors apart) failed: {type(error).__name__}: {str(error)[:300]}"

    @staticmethod
    def refusal(value, path, why):
        return f"{path}: a value of type {type_name(value)} cannot cross between the judge and the worker: {why}"


class InputsNotRebuilt(Exception):
    """A worker could not rebuild the judge's inputs (pkbw's failure, or a checkout the worker cannot
    import): the reply's kind is input_error, which the judge never counts against the candidate."""


class InputDecoder:
    """A worker's side of InputEncoder. group(ranks) -> this process's group of those ranks ("world": its
    default group), made in the same order on every worker (CandidateProcess.make_groups)."""

    def __init__(self, torch, group):
        self.torch, self.group = torch, group

    def leaf(self, node, tensor):
        torch = self.torch
        if not isinstance(node, (list, tuple)) or not node:
            raise ProtocolError(f"an input leaf that is not a list: {str(node)[:80]}")
        kind = node[0]
        if kind in ("t", "p") and len(node) == 3:
            value = tensor(node[1])
            if kind == "p":
                return torch.nn.Parameter(value, requires_grad=bool(node[2]))
            return value.requires_grad_(True) if node[2] else value
        if kind == "sc" and len(node) == 6:
            indices, values, size = tensor(node[1]), tensor(node[2]), list(node[3])
            try:  # the judge's own tensor, valid: no check (and torch 2's warning that none is made)
                value = torch.sparse_coo_tensor(indices, values, size, check_invariants=False)
            except TypeError:  # torch before 2.0: no such argument, no check
                value = torch.sparse_coo_tensor(indices, values, size)
            if node[4]:
                value = value._coalesced_(True)
            return value.requires_grad_(True) if node[5] else value
        if kind == "g" and len(node) == 2:
            return self.group("world" if node[1] == "world" else tuple(int(r) for r in node[1]))
        if kind == "G" and len(node) == 3:
            generator = torch.Generator(device=node[1])
            generator.set_state(torch.tensor(list(base64.b64decode(node[2])), dtype=torch.uint8))
            return generator
        raise ProtocolError(f"an input leaf '{str(kind)[:20]}' of {len(node)} items")

    def unpickle(self, body, tensor):
        if not isinstance(body, dict) or not isinstance(body.get("pickle"), str):
            raise ProtocolError("an object node without its pickle")
        decoder, memo = self, {}

        class Unpickler(pickle.Unpickler):
            def persistent_load(self, pid):
                key = repr(pid)
                if key not in memo:
                    memo[key] = decoder.leaf(pid, tensor)
                return memo[key]

        return Unpickler(io.BytesIO(base64.b64decode(body["pickle"]))).load()


def decode_value(node, torch, tensor, depth=0, inputs=None):
    """The inverse of encode_value, for a tree from the other process: every node is checked. inputs: a
    worker's InputDecoder for the judge's inputs; None (the judge reading a reply) refuses their
    kinds."""
    if depth > MAX_DEPTH:
        raise ProtocolError(f"a value nested deeper than {MAX_DEPTH} levels")
    if not isinstance(node, dict) or len(node) != 1:
        raise ProtocolError(f"a value node that is not a one-key object: {str(node)[:80]}")
    (kind, body), = node.items()
    if kind == "t":
        return tensor(body)
    if kind in ("l", "u") and isinstance(body, list):
        items = [decode_value(x, torch, tensor, depth + 1, inputs) for x in body]
        return tuple(items) if kind == "u" else items
    if kind == "d" and isinstance(body, list):
        result = {}
        for pair in body:
            if not isinstance(pair, list) or len(pair) != 2:
                raise ProtocolError("a dict entry that is not a [key, value] pair")
            key = decode_value(pair[0], torch, tensor, depth + 1)
            if not isinstance(key, (str, int, float, bool)) and key is not None:
                raise ProtocolError(f"a dict key of type {type(key).__name__}")
            result[key] = decode_value(pair[1], torch, tensor, depth + 1, inputs)
        return result
    if kind == "z" and isinstance(body, list) and all(type(x) is int for x in body):
        return torch.Size(body)
    if kind == "b" and isinstance(body, bool):
        return body
    if kind == "n" and body is None:
        return None
    if kind == "s" and isinstance(body, str):
        return body
    if kind == "i" and type(body) is int:
        return body
    if kind == "f" and isinstance(body, (int, float)) and not isinstance(body, bool):
        return float(body)
    if kind == "y":
        return dtype_named(body, torch)
    if kind == "v" and isinstance(body, str):
        try:
            return torch.device(body)
        except (RuntimeError, TypeError, ValueError):
            raise ProtocolError(f"a device '{body[:40]}'") from None
    if kind in ("x", "o") and inputs is None:
        raise ProtocolError(f"a value node '{kind}' (only the judge's inputs hold those)")
    if kind == "x":
        return inputs.leaf(body, tensor)
    if kind == "o":
        return inputs.unpickle(body, tensor)
    raise ProtocolError(f"a value node '{kind}' with a body of type {type(body).__name__}")


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


# ---------------------------------------------------------------------------------------------------
# Host tensors: all of one message's tensors packed into one memfd (one fd, whatever the count).

def pack_host(tensors, torch, seal, keep_layout):
    """(fd or None, [description]). seal: the sender gives up writing (F_SEAL_WRITE), so what the
    receiver maps can no longer change; the candidate's process seals its outputs."""
    plan, offset = [], 0
    for t in tensors:
        stride = dense_layout(t) if keep_layout else contiguous_strides(list(t.shape))
        if stride != list(t.stride()):
            t = t.contiguous()
        nbytes = span_elements(list(t.shape), stride) * t.element_size()
        plan.append((t, stride, offset, nbytes))
        offset += nbytes + (-nbytes % ALIGN)
    specs = [{"dtype": str(t.dtype).split(".")[-1], "shape": list(t.shape), "stride": stride,
              "transport": "memfd", "offset": off, "nbytes": n} for t, stride, off, n in plan]
    if offset == 0:
        return None, specs
    fd = os.memfd_create("pkbw-pkb-tensors", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    try:
        os.ftruncate(fd, offset)
        for t, _, off, n in plan:
            if n == 0:
                continue
            view = memoryview(as_bytes(t.detach(), torch).numpy())
            done = 0
            while done < n:
                done += os.pwrite(fd, view[done:], off + done)
        if seal:
            fcntl.fcntl(fd, fcntl.F_ADD_SEALS,
                        fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_WRITE | fcntl.F_SEAL_SEAL)
    except BaseException:
        os.close(fd)
        raise
    return fd, specs


def map_host(fd, writable, require_sealed):
    """The memfd's bytes as an mmap. require_sealed: refuse anything but a memfd the sender can no
    longer write or resize (a pipe, a device, a disk file, an unsealed memfd)."""
    if require_sealed:
        try:
            seals = fcntl.fcntl(fd, fcntl.F_GET_SEALS)
        except OSError:
            raise ProtocolError("a tensor file descriptor that is not a memfd") from None
        wanted = fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_WRITE
        if seals & wanted != wanted:
            raise ProtocolError("a tensor memfd that is not sealed against writing and resizing")
    size = os.fstat(fd).st_size
    if size == 0:
        return None, 0
    if require_sealed and size > os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"):
        raise ProtocolError(f"a tensor memfd of {size} bytes, more than this machine's memory")
    prot = mmap.PROT_READ | (mmap.PROT_WRITE if writable else 0)
    return mmap.mmap(fd, size, flags=mmap.MAP_SHARED, prot=prot), size


def host_tensor(mapping, size, spec, torch, contiguous_only):
    dtype, shape, stride, nbytes = tensor_spec(spec, torch, contiguous_only)
    offset = spec.get("offset")
    if type(offset) is not int or offset < 0 or spec.get("nbytes") != nbytes:
        raise ProtocolError("a host tensor with a bad offset or byte count")
    if nbytes == 0:
        return torch.empty_strided(shape, stride, dtype=dtype)
    if mapping is None or offset + nbytes > size:
        raise ProtocolError(f"a host tensor of {nbytes} bytes at {offset} past its memfd's {size} bytes")
    with warnings.catch_warnings():
        # A read-only mapping: torch warns that it cannot mark the tensor read-only. The judge never
        # writes into a candidate's output (it would fault); it only reads and copies.
        warnings.simplefilter("ignore")
        raw = torch.frombuffer(mapping, dtype=torch.uint8, count=nbytes, offset=offset)
    return raw.view(dtype).as_strided(shape, stride)


# ---------------------------------------------------------------------------------------------------
# CUDA tensors, through the driver's IPC (cuIpcGetMemHandle / cuIpcOpenMemHandle), called directly:
# only the candidate's process exports memory, and only the judge opens it. torch's own
# torch.multiprocessing path is not used in either direction, because (1) a handle names a whole
# cudaMalloc segment of the caching allocator, so a judge exporting its inputs would map its
# neighbouring allocations (the reference's outputs, the pristine inputs) into the candidate, and
# (2) rebuilding a tensor from a handle makes the consumer open shared-memory ref counters and events
# named by the producer, which the judge must not do on the candidate's say-so. So the judge asks the
# candidate's process to allocate its input buffers and copies into them, and copies the outputs out
# of the candidate's buffers; it bounds every access by the size of the mapped allocation.

class CUipcMemHandle(ctypes.Structure):
    _fields_ = [("reserved", ctypes.c_char * 64)]


class CudaIpc:
    LAZY_ENABLE_PEER_ACCESS = 1

    def __init__(self):
        self.lib = ctypes.CDLL("libcuda.so.1")

        def function(*names):
            for name in names:
                if hasattr(self.lib, name):
                    return getattr(self.lib, name)
            raise OSError(f"libcuda.so.1 has no {names[0]}")

        u64p, sizep = ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_size_t)
        self._range = function("cuMemGetAddressRange_v2", "cuMemGetAddressRange")
        self._range.argtypes = [u64p, sizep, ctypes.c_uint64]
        self._get = function("cuIpcGetMemHandle")
        self._get.argtypes = [ctypes.POINTER(CUipcMemHandle), ctypes.c_uint64]
        self._open = function("cuIpcOpenMemHandle_v2", "cuIpcOpenMemHandle")
        self._open.argtypes = [u64p, CUipcMemHandle, ctypes.c_uint]
        self._close = function("cuIpcCloseMemHandle")
        self._close.argtypes = [ctypes.c_uint64]
        self._error = function("cuGetErrorString")
        self._error.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
        self._current = function("cuCtxGetCurrent")
        self._current.argtypes = [ctypes.POINTER(ctypes.c_void_p)]
        self._alloc = function("cuMemAlloc_v2", "cuMemAlloc")
        self._alloc.argtypes = [u64p, ctypes.c_size_t]
        self._free = function("cuMemFree_v2", "cuMemFree")
        self._free.argtypes = [ctypes.c_uint64]

    def check(self, result, what):
        if result != 0:
            text = ctypes.c_char_p()
            self._error(result, ctypes.byref(text))
            raise RuntimeError(f"{what} failed: CUDA driver error {result} "
                               f"({(text.value or b'unknown').decode(errors='replace')})")

    def require_context(self):
        context = ctypes.c_void_p()
        self.check(self._current(ctypes.byref(context)), "cuCtxGetCurrent")
        if not context.value:
            raise RuntimeError("no current CUDA context on this thread (torch has not initialised the device)")

    def allocation(self, pointer):
        base, size = ctypes.c_uint64(), ctypes.c_size_t()
        self.check(self._range(ctypes.byref(base), ctypes.byref(size), pointer), "cuMemGetAddressRange")
        return base.value, size.value

    def export(self, pointer):
        """(handle as hex, offset of pointer in its allocation)."""
        base, _ = self.allocation(pointer)
        handle = CUipcMemHandle()
        self.check(self._get(ctypes.byref(handle), base),
                   "cuIpcGetMemHandle (PYTORCH_CUDA_ALLOC_CONF's expandable_segments or the cudaMallocAsync "
                   "backend allocate memory that legacy IPC cannot share)")
        return bytes(handle).hex(), pointer - base

    def open(self, handle_hex):
        """(mapped base, allocation size) of a handle from another process."""
        if not isinstance(handle_hex, str) or not re.fullmatch(r"[0-9a-f]{128}", handle_hex):
            raise ProtocolError("a CUDA IPC handle that is not 64 bytes of hex")
        handle = CUipcMemHandle()
        ctypes.memmove(ctypes.addressof(handle), bytes.fromhex(handle_hex), 64)
        base = ctypes.c_uint64()
        self.check(self._open(ctypes.byref(base), handle, self.LAZY_ENABLE_PEER_ACCESS), "cuIpcOpenMemHandle")
        try:
            mapped, size = self.allocation(base.value)
        except BaseException:
            self._close(base.value)
            raise
        if mapped != base.value:
            self._close(base.value)
            raise ProtocolError("a CUDA IPC handle that does not name the start of an allocation")
        return base.value, size

    def close(self, base):
        self.check(self._close(base), "cuIpcCloseMemHandle")

    def alloc(self, nbytes):
        """A device allocation of its own (cuMemAlloc, not torch's caching allocator): exported, its
        handle names this memory and nothing beside it. The judge's slots for the timed calls."""
        pointer = ctypes.c_uint64()
        self.check(self._alloc(ctypes.byref(pointer), max(nbytes, 1)), "cuMemAlloc")
        return pointer.value

    def free(self, pointer):
        self.check(self._free(pointer), "cuMemFree")


class DeviceBytes:
    """A span of device memory as torch can adopt it (no copy, no ownership: the judge closes the
    mapping itself once every tensor over it is gone)."""

    def __init__(self, pointer, nbytes):
        self.__cuda_array_interface__ = {"shape": (nbytes,), "typestr": "|u1", "data": (pointer, False),
                                         "version": 2, "strides": None}


def export_cuda(tensors, ipc):
    """Descriptions of CUDA tensors for the judge (the tensors must stay alive until it has copied)."""
    specs = []
    for t, stride in tensors:
        nbytes = span_elements(list(t.shape), stride) * t.element_size()
        spec = {"dtype": str(t.dtype).split(".")[-1], "shape": list(t.shape), "stride": stride,
                "transport": "cuda", "nbytes": nbytes}
        if nbytes:
            spec["handle"], spec["offset"] = ipc.export(t.data_ptr())
        specs.append(spec)
    return specs


class OpenedCuda:
    """The judge's side of one exchange: the candidate's allocations mapped, every access bounds-checked
    against the mapped allocation's size; close() synchronises the device and unmaps them."""

    def __init__(self, ipc, torch, device):
        self.ipc, self.torch, self.device = ipc, torch, device
        self.mapped = {}

    def span(self, handle, offset, nbytes):
        """nbytes of the candidate's memory at offset into the allocation that handle names, as uint8."""
        if type(offset) is not int or offset < 0:
            raise ProtocolError("a CUDA tensor with a bad offset")
        if handle not in self.mapped:
            self.mapped[handle] = self.ipc.open(handle)
        base, size = self.mapped[handle]
        if offset + nbytes > size:
            raise ProtocolError(f"a CUDA tensor of {nbytes} bytes at {offset} past its allocation's {size} bytes")
        return self.torch.as_tensor(DeviceBytes(base + offset, nbytes), device=self.device)

    def output(self, spec):
        """A view of one of the candidate's (contiguous) output tensors; copy it before close()."""
        torch = self.torch
        dtype, shape, stride, nbytes = tensor_spec(spec, torch, contiguous_only=True)
        if spec.get("transport") != "cuda" or spec.get("nbytes") != nbytes:
            raise ProtocolError("a CUDA tensor description with a bad transport or byte count")
        if nbytes == 0:
            return torch.empty_strided(shape, stride, dtype=dtype, device=self.device)
        return self.span(spec.get("handle"), spec.get("offset"), nbytes).view(dtype).as_strided(shape, stride)

    def close(self):
        if self.mapped:
            self.torch.cuda.synchronize(self.device)
        mapped, self.mapped = self.mapped, {}
        for base, _ in mapped.values():
            self.ipc.close(base)


# ---------------------------------------------------------------------------------------------------
# Timing (docs/pkb-interop.md, "Timing"): the judge measures, the workers only compute. Each side's
# calls run in a worker process: the candidate's own, and the reference's timing worker (this program
# with PKB's reference loaded). PKB's protocol (utils/performance.py) runs here too, timed by the
# worker itself as PKB times it: the PKB-compatible figure, never pkbw's.

def first_tensor_slot(args, torch):
    """PKB's choice of the timed tensor (scripts/worker.py): the first top-level tensor argument, else
    the first tensor inside the first list/tuple argument. Returns (index, inner index or None)."""
    for i, a in enumerate(args):
        if isinstance(a, torch.Tensor):
            return i, None
    for i, a in enumerate(args):
        if isinstance(a, (list, tuple)):
            for j, item in enumerate(a):
                if isinstance(item, torch.Tensor):
                    return i, j
            break
    return None


def with_slot(args, slot, tensor):
    args = list(args)
    i, j = slot
    if j is None:
        args[i] = tensor
    else:
        inner = list(args[i])
        inner[j] = tensor
        args[i] = type(args[i])(inner) if isinstance(args[i], tuple) else inner
    return args


def slot_tensor(args, slot):
    i, j = slot
    return args[i] if j is None else args[i][j]


def pkb_plan(args, l2_bytes, torch):
    """(slot, input groups, timed tensor bytes): PKB clones the first tensor argument into enough
    groups that one pass exceeds 3x L2."""
    slot = first_tensor_slot(args, torch)
    if slot is None:
        raise RuntimeError("no tensor argument to time (PKB's worker raises here too)")
    first = slot_tensor(args, slot)
    size = first.element_size() * first.numel()
    groups = 1 if size == 0 or size >= 3 * l2_bytes else min(max(3 * l2_bytes // size + 1, 2), 128)
    return slot, groups, size


def output_items(value, torch):
    """[(path, leaf)] of an output in order, named as PKB saves outputs (core/outputs.h): a top-level
    tuple or list's items output_<i>, a dict's entries by key, a lone tensor 'output'; torch.Size and
    other non-containers are leaves."""
    items = []

    def walk(node, name, depth):
        if depth > MAX_DEPTH:
            raise TypeError(f"{name}: nested deeper than {MAX_DEPTH} levels")
        if isinstance(node, (list, tuple)) and not isinstance(node, torch.Size):
            for i, item in enumerate(node):
                walk(item, f"{name}[{i}]", depth + 1)
        elif isinstance(node, dict):
            for key, item in node.items():
                walk(item, f"{name}.{key}" if name else str(key), depth + 1)
        else:
            items.append((name, node))

    if isinstance(value, (list, tuple)) and not isinstance(value, torch.Size):
        for i, item in enumerate(value):
            walk(item, f"output_{i}", 1)
    elif isinstance(value, dict):
        walk(value, "", 0)
    else:
        walk(value, "output", 0)
    return items


class Timer:
    def __init__(self, torch, cuda, count):
        self.torch, self.cuda = torch, cuda
        if cuda:
            self.marks = [torch.cuda.Event(enable_timing=True) for _ in range(count)]
        else:
            self.marks = [0.0] * count

    def mark(self, i):
        if self.cuda:
            self.marks[i].record()
        else:
            self.marks[i] = time.perf_counter()

    def between(self, a, b):
        if self.cuda:
            return self.marks[a].elapsed_time(self.marks[b])
        return (self.marks[b] - self.marks[a]) * 1e3


class OutputSlot:
    """Where one output leaf of every timed call goes: a tensor leaf's K slot views (judge-owned shared
    memory), or None for a value leaf, which the reply carries."""

    def __init__(self, path, views):
        self.path, self.views = path, views


class Timing:
    """One side's timed loops, in its worker. barrier: the worker group's (the candidates' or the
    reference workers'), never the judges'."""

    def __init__(self, torch, cuda, barrier, fn):
        self.torch, self.cuda, self.barrier, self.fn = torch, cuda, barrier, fn
        self.pkb_calls = []
        self.inputs, self.outputs = [], None  # per call: its arguments; the output layout

    def sync(self):
        if self.cuda:
            self.torch.cuda.synchronize()

    # PKB's protocol, on the eval's inputs of trial 0.

    def pkb_warmup(self, args, groups, warmup):
        slot = first_tensor_slot(args, self.torch)
        first = slot_tensor(args, slot)
        self.pkb_calls = [with_slot(args, slot, first.clone()) for _ in range(groups)]
        self.sync()
        self.barrier()
        for i in range(warmup):
            self.fn(*self.pkb_calls[i % groups])
        self.sync()

    def pkb_timed(self, iterations):
        timer = Timer(self.torch, self.cuda, iterations + 1)
        timer.mark(0)
        for i in range(iterations):
            self.fn(*self.pkb_calls[i % len(self.pkb_calls)])
            timer.mark(i + 1)
        self.sync()
        samples = [timer.between(i, i + 1) for i in range(iterations)]
        return {"samples_ms": samples, "span_ms": sum(samples), "calls": iterations}

    # pkbw's calls: call k reads input set k and writes output slot k, both in the judge's memory.

    def set_calls(self, inputs, outputs):
        """inputs: per call, its argument list; outputs: [OutputSlot] (the reference's output leaves), or
        None when the calls' outputs are not kept (the judge does not check them)."""
        self.inputs, self.outputs = inputs, outputs

    def keep_output(self, result, k, values):
        """Copies call k's tensor leaves into slot k (queued on the device's stream on CUDA) and appends
        its value leaves to `values`. Returns None, or why the output does not fit the layout (the
        call then fails its check: its slot keeps the judge's poison)."""
        torch = self.torch
        try:
            items = dict(output_items(result, torch))
        except TypeError as error:
            return str(error)
        if set(items) != {slot.path for slot in self.outputs}:
            return (f"output leaves {sorted(items)[:8]} where the reference's are "
                    f"{sorted(slot.path for slot in self.outputs)[:8]}")
        for slot in self.outputs:
            leaf = items[slot.path]
            if slot.views is None:
                values.append(leaf)
                continue
            if not isinstance(leaf, torch.Tensor):
                return f"{slot.path}: a {type(leaf).__name__} where the reference has a tensor"
            view = slot.views[k]
            if tuple(leaf.shape) != tuple(view.shape):
                return f"{slot.path}: tensor shape {tuple(leaf.shape)} where the reference's is {tuple(view.shape)}"
            try:
                view.copy_(leaf.detach())
            except (RuntimeError, TypeError) as error:
                return f"{slot.path}: cannot be copied into its slot: {str(error)[:200]}"
        return None

    def timed_calls(self, count):
        """The judge's timed block: this group's barrier, then `count` calls (0: the judge's round trip),
        each bracketed by marks that include its copy into its slot."""
        if count > len(self.inputs):
            raise RuntimeError(f"{count} timed calls asked for, {len(self.inputs)} input sets mapped")
        self.sync()
        self.barrier()
        timer = Timer(self.torch, self.cuda, 2 * count)
        failed, values = [], [[] for _ in range(count)]
        for k in range(count):
            timer.mark(2 * k)
            result = self.fn(*self.inputs[k])
            if self.outputs is not None:
                problem = self.keep_output(result, k, values[k])
                if problem is not None:
                    failed.append([k, problem[:500]])
            timer.mark(2 * k + 1)
        self.sync()
        reply = {"samples_ms": [timer.between(2 * k, 2 * k + 1) for k in range(count)],
                 "span_ms": timer.between(0, 2 * count - 1) if count else 0.0, "calls": count,
                 "failed": failed[:16], "failed_count": len(failed)}
        if self.outputs is not None and any(slot.views is None for slot in self.outputs):
            reply["values"] = [self.encode_values(row) for row in values]
        return reply

    def encode_values(self, row):
        def no_tensor(value, path):
            raise TypeError(f"{path}: a tensor where the reference has a value")

        try:
            return [encode_value(v, self.torch, no_tensor, "value") for v in row]
        except TypeError:
            return None  # the judge counts the call as failing its check


# The traced pass (docs/tracing.md): each side's process profiles its own iterations with torch's
# profiler, the judge's reference and the candidate's process, as pkbw-rank and pkbw-candidate trace
# theirs. The candidate's chrome trace comes back in a memfd, whatever its process may write to.
TRACE_LIMIT_BYTES = 512 << 20


class TraceUnavailable(Exception):
    """The profiler could not record or write a trace (not the side's code failing)."""


def profile_iterations(torch, cuda, barrier, fn, args, iterations, path):
    """`iterations` calls of fn under torch's profiler, after one unnamed warm-up call, each inside a
    range named ProfilerStep#i (the timeline's iterations, core/kineto.h) that a device
    synchronisation closes, so that the range spans the call's kernels; the chrome trace is written
    to path. Raises what fn raises, and TraceUnavailable when the profiler itself fails. The calls
    run even when the profiler cannot start: fn may call collectives, and the other ranks' calls
    would wait for this rank's."""
    profiler, failure = None, None
    try:
        from torch.profiler import ProfilerActivity, profile, record_function
        activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
        profiler = profile(activities=activities)
    except Exception as error:  # noqa: BLE001 - any profiler failure means no trace, not a failed side
        failure = f"torch's profiler cannot start: {error}"
    if cuda:
        torch.cuda.synchronize()
    barrier()
    if profiler is not None:
        try:
            profiler.start()
        except Exception as error:  # noqa: BLE001
            profiler, failure = None, f"torch's profiler cannot start: {error}"
    # One call before the steps takes the profiler's first-activity costs (CUPTI's set-up under
    # Kineto) out of step 0; its events stay in the trace, outside every iteration.
    fn(*args)
    if cuda:
        torch.cuda.synchronize()
    for i in range(iterations):
        with record_function(f"ProfilerStep#{i}") if profiler is not None else contextlib.nullcontext():
            fn(*args)
            if cuda:
                torch.cuda.synchronize()
    if profiler is None:
        raise TraceUnavailable(failure)
    try:
        profiler.stop()
        profiler.export_chrome_trace(path)
    except Exception as error:  # noqa: BLE001
        raise TraceUnavailable(f"torch's profiler cannot write {path}: {error}") from None


def load_module(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path} as a module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    if not hasattr(module, "solution"):
        raise AttributeError(f"{path} defines no solution()")
    return module


def error_kind(error):
    if isinstance(error, OutputRefused):
        return "invalid_output"
    if isinstance(error, InputsNotRebuilt):
        return "input_error"
    text = str(error)
    return "cuda_error" if "CUDA error" in text or "cudaError" in text else "solution_error"


# ---------------------------------------------------------------------------------------------------
# The candidate's process: requests from the judge, one at a time, each answered with {"ok": true,
# ...} or {"ok": false, "kind", "type", "message", "traceback"}.

class CandidateProcess:
    def __init__(self, channel):
        self.channel = channel
        self.torch = None
        self.import_error = None
        self.solution = None
        self.staged = []    # CUDA input buffers allocated for the next call
        self.holding = []   # the last reply's CUDA tensors: alive until the judge's next request
        self.timing = None
        self.regions = []  # the judge's slot memory mapped here: ("host", mmap) or ("cuda", base)
        self.ipc = None
        self.launch_errors = None  # pkbw_cuda_errors.LaunchErrors, made on the first CUDA call
        self.store = None
        self.groups = {}  # sorted global ranks -> this process's group: the judges' new_group calls, replayed

    def start_torch(self, cuda_device):
        # Before the judge's first request, so that the import and the CUDA context overlap the judge's.
        try:
            import torch
            import torch.distributed
        except Exception as error:  # noqa: BLE001 - reported with the init reply
            self.import_error = f"{sys.executable} cannot import torch: {error}"
            return
        try:
            if cuda_device is not None:
                torch.cuda.set_device(cuda_device)
                torch.empty(1, device=torch.device("cuda", cuda_device))
        except Exception as error:  # noqa: BLE001
            self.import_error = f"the candidate's process cannot use CUDA device {cuda_device}: {error}"
            return
        self.torch = torch

    def serve(self):
        while True:
            try:
                message, fds = self.channel.recv()
            except ChannelClosed:
                return 0
            self.holding = []
            op = message.get("op")
            try:
                handler = getattr(self, f"op_{op}", None) if isinstance(op, str) else None
                if handler is None:
                    raise RuntimeError(f"unknown request {op!r}")
                reply, reply_fds = handler(message, fds)
            except Exception as error:  # noqa: BLE001 - every failure goes back to the judge
                close_fds(fds)
                reply = {"ok": False, "kind": error_kind(error),
                         "type": type(error).__name__, "message": str(error)[:4000],
                         "traceback": traceback.format_exc()[-8000:]}
                reply_fds = []
            if message.get("release_inputs") and getattr(self, "cuda", False) and self.torch is not None:
                # The judge parked its own copy of these large inputs (pkbw_input_parking.py) and takes it
                # back after this reply: the staged copy (the handler's, gone with its frame, whether it
                # returned or raised) goes back to the driver first, as PKB's one process holds one copy.
                # Outputs that are inputs stay: export holds them.
                self.staged = []
                gc.collect()  # a raised call's frames may sit in a cycle with its traceback
                self.torch.cuda.empty_cache()
            reply.setdefault("ok", True)
            reply["seq"] = message.get("seq")
            try:
                self.channel.send(reply, reply_fds)
            finally:
                close_fds(reply_fds)
            if op == "exit":
                return 0

    def op_init(self, message, fds):
        if self.torch is None:
            return {"ok": False, "kind": "environment", "type": "ImportError", "message": self.import_error,
                    "traceback": ""}, []
        torch = self.torch
        import torch.distributed as dist
        self.rank, self.world = int(message["rank"]), int(message["world_size"])
        self.cuda = message["device"] == "cuda"
        local_rank = int(message["local_rank"])
        os.environ.update({"RANK": str(self.rank), "WORLD_SIZE": str(self.world), "LOCAL_RANK": str(local_rank),
                           "MASTER_ADDR": message["master_addr"], "MASTER_PORT": str(message["master_port"])})
        if message.get("checkout"):
            sys.path.insert(0, message["checkout"])
        if self.cuda:
            torch.cuda.set_device(local_rank)
            self.device = torch.device("cuda", local_rank)
            torch.empty(1, device=self.device)  # the primary context, current on this thread
            self.ipc = CudaIpc()
            self.ipc.require_context()
        else:
            self.device = torch.device("cpu")
        kwargs = {"backend": "nccl" if self.cuda else "gloo", "rank": self.rank, "world_size": self.world}
        try:
            # Rank 0's store is already listening ("store"), so no peer's connection is refused and
            # retried; the PrefixStore is the one init_process_group would put over an env:// store.
            store = self.store if self.store is not None else torch.distributed.TCPStore(
                message["master_addr"], int(message["master_port"]), self.world, self.rank == 0, STORE_TIMEOUT)
            kwargs["store"] = torch.distributed.PrefixStore("default_pg", store)
            if self.cuda:
                try:
                    dist.init_process_group(**kwargs, device_id=self.device)
                except TypeError:
                    dist.init_process_group(**kwargs)
            else:
                dist.init_process_group(**kwargs)
        except Exception as error:  # noqa: BLE001
            return {"ok": False, "kind": "rendezvous", "type": type(error).__name__,
                    "message": f"the candidates' init_process_group failed: {error}", "traceback": ""}, []
        self.dist = dist
        return {"pid": os.getpid(), "ppid": os.getppid()}, []

    def op_store(self, message, fds):
        """Rank 0: the candidates' store, listening before any other rank's candidate connects (so
        none is refused and retries after a backoff); the judge shares its port with the other judges.
        The port is the judge's pick, as env:// would be given one (port 0 is not relied on)."""
        if self.torch is None:
            return {"ok": False, "kind": "environment", "type": "ImportError", "message": self.import_error,
                    "traceback": ""}, []
        self.store = self.torch.distributed.TCPStore(message["host"], int(message["port"]),
                                                     int(message["world_size"]), True, STORE_TIMEOUT,
                                                     wait_for_workers=False)
        return {"port": self.store.port}, []

    def op_load(self, message, fds):
        self.solution = load_module("solution_mod", message["solution_file"]).solution
        return {}, []

    def op_alloc(self, message, fds):
        """CUDA buffers for the next call's inputs; the judge copies the inputs into them."""
        torch = self.torch
        self.staged = []
        for spec in message["tensors"]:
            dtype = getattr(torch, spec["dtype"])
            self.staged.append((torch.empty_strided(spec["shape"], spec["stride"], dtype=dtype, device=self.device),
                                spec["stride"]))
        return {"tensors": export_cuda(self.staged, self.ipc)}, []

    def make_groups(self, listed):
        """The process groups PKB's create_input_tensor made among the judges (each judge's list, the same
        on every rank: every dist.new_group call's ranks, first seen first), made here in that order by
        every worker of this group, as new_group needs every process of the world to call it. Each is
        made once, however often the judges' trials made it again."""
        if not listed:
            return
        if not isinstance(listed, list):
            raise ProtocolError("a groups list that is not a list")
        for ranks in listed:
            if not isinstance(ranks, list) or not all(type(r) is int and 0 <= r < self.world for r in ranks):
                raise ProtocolError(f"a group's ranks {str(ranks)[:80]}")
            key = tuple(sorted(ranks))
            if key not in self.groups:
                self.groups[key] = self.dist.new_group(ranks=list(key))

    def group(self, ranks):
        if ranks == "world":
            return self.dist.group.WORLD
        if ranks not in self.groups:
            raise InputsNotRebuilt(f"a process group of ranks {list(ranks)} that PKB's create_input_tensor did "
                                   "not make with dist.new_group (pkbw makes in the workers only the groups it "
                                   "saw made)")
        return self.groups[ranks]

    def inputs(self, message, tensor):
        """The judge's input tree rebuilt here (its groups first); any failure is an input_error."""
        try:
            self.make_groups(message.get("process_groups"))
            return decode_value(message["args"], self.torch, tensor, inputs=InputDecoder(self.torch, self.group))
        except InputsNotRebuilt:
            raise
        except Exception as error:  # noqa: BLE001 - pkbw's failure or the checkout's, never the candidate's
            raise InputsNotRebuilt(f"the judge's inputs cannot be rebuilt in this process: "
                                   f"{type(error).__name__}: {error}") from error

    def arguments(self, message, fds):
        torch = self.torch
        mapping, size = (None, 0)
        if fds:
            mapping, size = map_host(fds[0], writable=True, require_sealed=False)
        close_fds(fds)
        staged, self.staged = self.staged, []

        def tensor(index):
            spec = message["tensors"][index]
            if spec["transport"] == "staged":
                return staged[spec["index"]][0]
            return host_tensor(mapping, size, spec, torch, contiguous_only=False)

        return self.inputs(message, tensor)

    def op_call(self, message, fds):
        args = self.arguments(message, fds)
        result = self.solution(*args)
        if self.cuda:
            self.torch.cuda.synchronize()
            if self.launch_errors is None:
                self.launch_errors = pkbw_cuda_errors.LaunchErrors()
            pkbw_cuda_errors.raise_pending(self.launch_errors)
        return self.export(result)

    def export(self, result):
        torch = self.torch
        host, device, leaves = [], [], []

        def tensor(t, path):
            if t.layout != torch.strided:
                raise OutputRefused(f"{path}: a {t.layout} tensor (only strided tensors cross to the judge)")
            t = t.detach()
            if t.is_cuda:
                # PKB compares with .to(ref.device): an output on another GPU is moved here, once.
                t = t.to(self.device).contiguous()
                device.append((t, contiguous_strides(list(t.shape))))
                leaves.append(("cuda", len(device) - 1))
            else:
                host.append(t.contiguous())
                leaves.append(("host", len(host) - 1))
            return len(leaves) - 1

        try:
            tree = encode_value(result, torch, tensor)
        except TypeError as error:
            raise OutputRefused(str(error)) from None
        fd, host_specs = pack_host(host, torch, seal=True, keep_layout=False)
        if device:
            # .to() and .contiguous() above may have queued copies after the call's synchronisation:
            # the judge reads these buffers as soon as it has the reply.
            torch.cuda.synchronize()
        device_specs = export_cuda(device, self.ipc) if device else []
        self.holding = device  # the judge copies out of these before its next request
        specs = [host_specs[i] if where == "host" else device_specs[i] for where, i in leaves]
        return {"result": tree, "tensors": specs}, ([fd] if fd is not None else [])

    def timing_loops(self):
        if self.timing is None:
            self.timing = Timing(self.torch, self.cuda, self.dist.barrier, self.solution)
        return self.timing

    def op_pkb_warmup(self, message, fds):
        """PKB's protocol: the eval's inputs of trial 0 come with the request."""
        args = self.arguments(message, fds)
        self.timing_loops().pkb_warmup(args, int(message["groups"]), int(message["warmup"]))
        return {}, []

    def op_pkb_timed(self, message, fds):
        return self.timing_loops().pkb_timed(int(message["iterations"])), []

    def map_region(self, spec, fds):
        """One of the judge's shared regions as a uint8 tensor: a memfd (fds[spec['fd']]) on the host,
        an allocation the judge exported on CUDA."""
        torch = self.torch
        nbytes = int(spec["bytes"])
        if spec["transport"] == "memfd":
            mapping, size = map_host(fds[int(spec["fd"])], writable=True, require_sealed=False)
            if mapping is not None:
                self.regions.append(("host", mapping))
            if nbytes > size:
                raise RuntimeError(f"a slot region of {nbytes} bytes in a memfd of {size}")
            return torch.frombuffer(mapping, dtype=torch.uint8, count=nbytes) if nbytes else \
                torch.empty(0, dtype=torch.uint8)
        base, size = self.ipc.open(spec["handle"])
        self.regions.append(("cuda", base))
        if nbytes > size:
            raise RuntimeError(f"a slot region of {nbytes} bytes in an allocation of {size}")
        return torch.as_tensor(DeviceBytes(base, nbytes), device=self.device)

    def op_map_slots(self, message, fds):
        """The judge's memory for the timed calls: `calls` input sets, set after set (each laid out as
        `args` and `tensors` say), and as many output slots (laid out as `leaves` say: the reference's
        output of trial 0). Call k's arguments and output slot are views of set k and slot k."""
        self.unmap_slots()
        torch = self.torch
        try:
            inputs = self.map_region(message["inputs"], fds)
            outputs = self.map_region(message["outputs"], fds) if message.get("outputs") else None
        finally:
            close_fds(fds)
        calls, set_bytes = int(message["calls"]), int(message["set_bytes"])
        arguments = []
        for k in range(calls):
            specs = message["tensors"]
            arguments.append(self.inputs(message, lambda i, k=k: slot_view(inputs, k * set_bytes, specs[i], torch)))
        layout = None
        if outputs is not None:
            slot_bytes = int(message["slot_bytes"])
            layout = [OutputSlot(leaf["path"], None if leaf.get("value") else
                                 [slot_view(outputs, k * slot_bytes, leaf, torch) for k in range(calls)])
                      for leaf in message["leaves"]]
        self.timing_loops().set_calls(arguments, layout)
        return {}, []

    def op_own_inputs(self, message, fds):
        """Input sets drawn here by the checkout's own generator, for timed calls whose inputs the judge
        cannot lay into its slots (an argument that cannot cross to this process, shapes that change
        between trials): their outputs are not kept, and the judge says the calls are not checked."""
        from utils.input_output_tensors import create_input_tensor
        self.unmap_slots()
        dtype = dtype_named(message["dtype"], self.torch)
        shape = tuple(int(x) for x in message["shape"])
        sets = [list(create_input_tensor(self.rank, self.world, int(message["problem_id"]), shape, dtype,
                                         int(trial), device=self.device)) for trial in message["trials"]]
        self.timing_loops().set_calls(sets, None)
        return {}, []

    def op_timed_calls(self, message, fds):
        return self.timing_loops().timed_calls(int(message["calls"])), []

    def unmap_slots(self):
        if self.timing is not None:
            self.timing.set_calls([], None)
        regions, self.regions = self.regions, []
        if any(kind == "cuda" for kind, _ in regions):
            self.torch.cuda.synchronize()
        for kind, handle in regions:
            if kind == "host":
                try:
                    handle.close()
                except BufferError:
                    pass  # the solution keeps a view of it: the mapping lives as long as that
            else:
                self.ipc.close(handle)

    def op_ping(self, message, fds):
        """An empty answer: before each timed request, so that the worker's path to it is as warm as the
        round trip's calibration (a process woken after a long sleep answers a fraction of a millisecond
        later)."""
        return {}, []

    def op_unmap_slots(self, message, fds):
        self.unmap_slots()
        return {}, []

    def op_trace(self, message, fds):
        args = self.arguments(message, fds)
        folder = tempfile.mkdtemp(prefix="pkbw-trace-")
        try:
            path = os.path.join(folder, "trace.json")
            try:
                profile_iterations(self.torch, self.cuda, self.dist.barrier, self.solution, args,
                                   int(message["iterations"]), path)
                with open(path, "rb") as f:
                    data = f.read(TRACE_LIMIT_BYTES + 1)
            except (TraceUnavailable, OSError) as error:
                return {"trace_missing": str(error)[:1000]}, []
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        if len(data) > TRACE_LIMIT_BYTES:
            return {"trace_missing": f"the trace is over {TRACE_LIMIT_BYTES} bytes"}, []
        fd = os.memfd_create("pkbw-trace", os.MFD_CLOEXEC)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        return {"bytes": len(data)}, [fd]

    def op_exit(self, message, fds):
        self.unmap_slots()
        self.timing = None
        if getattr(self, "dist", None) is not None and self.dist.is_initialized():
            self.dist.barrier()
            self.dist.destroy_process_group()
        return {}, []


class OutputRefused(Exception):
    """The solution returned something that cannot be described to the judge."""


def main():
    die_with_parent()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--channel-fd", type=int, required=True)
    parser.add_argument("--cuda-device", type=int)
    args = parser.parse_args()
    channel = Channel(socket.socket(fileno=args.channel_fd))
    process = CandidateProcess(channel)
    process.start_torch(args.cuda_device)
    try:
        code = process.serve()
    except Exception:  # noqa: BLE001 - the judge sees the closed channel and reports it
        traceback.print_exc()
        code = 5
    sys.stdout.flush()
    sys.stderr.flush()
    # os._exit: a solution's threads or a wedged communicator must not keep the process alive.
    os._exit(code)


if __name__ == "__main__":
    main()
