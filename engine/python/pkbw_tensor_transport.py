"""How tensors' bytes cross between PKB's Python judge and its workers, never inside a message: host
tensors packed into one memfd per message (sealed when the candidate's process sends them), CUDA tensors
through the driver's IPC, the judge bounding every access by the memory it mapped.
"""

import ctypes
import fcntl
import mmap
import os
import re
import warnings

from pkbw_channel import ProtocolError
from pkbw_tensor_layout import as_bytes, contiguous_strides, dense_layout, span_elements, tensor_spec

ALIGN = 64


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
