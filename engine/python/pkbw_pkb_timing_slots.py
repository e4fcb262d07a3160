"""PKB's Python judge: the memory its timed calls read and write (docs/pkb-interop.md, "Timing"): the
regions workers map, an input set and the reference's output laid out in them, and how many calls a
block can hold.
"""

import fcntl
import mmap
import os

from pkbw_pkb_timed_loops import output_items
from pkbw_tensor_layout import contiguous_strides, dense_layout, span_elements
from pkbw_tensor_transport import DeviceBytes
from pkbw_value_encoding import InputEncoder, encode_value

HOST_MEMORY_BUDGET = 512 << 20    # staging and slots per rank on the host
MAX_CALLS_PER_BLOCK = 128         # core/timing_checks.h kMaxCallsPerBlock


class Region:
    """Judge-owned memory that workers map: a memfd sealed against resizing on the host (a worker cannot
    shrink it under the judge's mapping), a cuMemAlloc allocation of its own on CUDA (its IPC handle
    names nothing else of the judge's). `tensor`: the bytes as uint8, in the judge."""

    def __init__(self, torch, device, ipc, nbytes):
        self.nbytes, self.ipc, self.fd, self.mapping, self.pointer = nbytes, ipc, None, None, None
        size = max(nbytes, 1)
        if ipc is None:
            self.fd = os.memfd_create("pkbw-pkb-slots", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
            os.ftruncate(self.fd, size)
            fcntl.fcntl(self.fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL)
            self.mapping = mmap.mmap(self.fd, size, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ | mmap.PROT_WRITE)
            self.tensor = torch.frombuffer(self.mapping, dtype=torch.uint8, count=size)[:nbytes]
        else:
            self.pointer = ipc.alloc(size)
            self.tensor = torch.as_tensor(DeviceBytes(self.pointer, size), device=device)[:nbytes]

    def spec(self, fds):
        """Its description for a worker's map_slots (its memfd appended to fds)."""
        if self.fd is not None:
            fds.append(self.fd)
            return {"transport": "memfd", "bytes": self.nbytes, "fd": len(fds) - 1}
        handle, _ = self.ipc.export(self.pointer)
        return {"transport": "cuda", "bytes": self.nbytes, "handle": handle}

    def close(self):
        self.tensor = None
        if self.mapping is not None:
            try:
                self.mapping.close()
            except BufferError:
                pass  # a view of it is still alive: the mapping goes with it
            os.close(self.fd)
        if self.pointer is not None:
            self.ipc.free(self.pointer)
        self.mapping = self.pointer = None


def aligned(nbytes):
    return (nbytes + 255) // 256 * 256


def lay_out_inputs(args, torch, device):
    """(tree, [(tensor, spec)], set bytes): an input set as the slots hold it, each tensor at a 256-byte
    aligned offset in its own layout when dense (a transpose stays one), else contiguous. Raises
    TypeError naming what cannot be laid into a slot."""
    leaves, offset = [], 0

    def tensor(t, path):
        nonlocal offset
        t = t.detach()
        if t.device != device:
            raise TypeError(f"{path}: a tensor on {t.device}, where the timed calls' inputs lie on {device}")
        if t.layout != torch.strided:
            raise TypeError(f"{path}: a {t.layout} tensor")
        stride = dense_layout(t)
        if stride != list(t.stride()):
            t = t.contiguous()
        nbytes = span_elements(list(t.shape), stride) * t.element_size()
        leaves.append((t, {"dtype": str(t.dtype).split(".")[-1], "shape": list(t.shape), "stride": stride,
                           "offset": offset}))
        offset += aligned(nbytes)
        return len(leaves) - 1

    tree = encode_value(list(args), torch, tensor, "input", inputs=InputEncoder(torch, tensor))
    return tree, leaves, offset


def lay_out_outputs(output, torch):
    """([leaf], slot bytes) of the reference's output of trial 0: each tensor leaf's slot (contiguous,
    256-byte aligned), each other leaf a value the workers send back."""
    leaves, offset = [], 0
    for path, leaf in output_items(output, torch):
        if isinstance(leaf, torch.Tensor):
            shape = list(leaf.shape)
            leaves.append({"path": path, "dtype": str(leaf.dtype).split(".")[-1], "shape": shape,
                           "stride": contiguous_strides(shape), "offset": offset})
            offset += aligned(leaf.numel() * leaf.element_size())
        else:
            leaves.append({"path": path, "value": True})
    return leaves, offset


def plan_calls(input_bytes, output_bytes, budget, requested, pairs):
    """(calls per block, reason): core/timing_checks.cpp plan_checked_timing. Each set is read by one call
    only and the judge writes 3x L2 after loading a block (--rotation copies), so the calls need not
    span the cache to read their inputs from device memory."""
    calls = min(max(requested, 1), MAX_CALLS_PER_BLOCK)
    reason = f"{calls} calls asked for" + (f" (at most {MAX_CALLS_PER_BLOCK})" if requested > MAX_CALLS_PER_BLOCK else "")
    per_call = (pairs + 2) * input_bytes + 2 * output_bytes
    if per_call > 0 and budget > 0 and calls * per_call > budget:
        calls = max(budget // per_call, 1)
        reason = f"lowered to {calls} so that staging and slots fit {budget / 2**20:.1f} MiB " \
                 f"({per_call / 2**20:.1f} MiB per call)"
    return calls, reason
