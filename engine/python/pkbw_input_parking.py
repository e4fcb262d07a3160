"""The judge's copy of a trial's inputs, parked in host memory while the candidate's process runs.

PKB's harness runs the reference and the solution in one process on one copy of the inputs. pkbw runs
the candidate in a process of its own, so during the candidate's call the device holds two copies: the
judge's (for the reference, which runs after it) and the candidate's staged one. For most problems that
is nothing; for inputs that fill a large part of the device it is the difference between a run that fits
and one that does not (68 at PKB's size on one H200: a 57 GB embedding shard, which a published solution
mirrors in a 57 GB symmetric buffer: 114 GB in one process, 171 GB with the judge's copy beside it).

So when the judge's CUDA inputs exceed PARK_FRACTION of the device's memory, after they are staged in
the candidate's buffers (device to device), the judge copies each input to host memory, frees its
storage (the tensors, views and module parameters keep their objects; only the bytes go) and hands the
memory back to the driver; the candidate is asked to release its staged copy after the call; then the
judge restores its inputs, bit for bit, before the reference runs. The peak is PKB's own.
"""

# Park when the judge's CUDA inputs exceed 1/PARK_FRACTION of the device's memory: then the two copies
# and a solution's working set of the same size no longer fit together.
PARK_FRACTION = 4


def storage_of(t):
    """The untyped storage under a tensor (torch 2's untyped_storage, torch 1.13's storage().untyped())."""
    return t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage().untyped()


def inputs_bytes(tensors):
    """The bytes of the distinct storages under `tensors` (views of one buffer count once)."""
    seen = {}
    for t in tensors:
        s = storage_of(t)
        seen[s.data_ptr()] = max(seen.get(s.data_ptr(), 0), s.nbytes())
    return sum(seen.values())


def should_park(tensors, device_total_bytes, device_free_bytes=None):
    """Over 1/PARK_FRACTION of the device, or (after staging) more than the device has free: a candidate
    whose working set is its inputs' size again would not fit beside the judge's copy."""
    if not tensors or device_total_bytes <= 0:
        return False
    size = inputs_bytes(tensors)
    return size * PARK_FRACTION > device_total_bytes or (device_free_bytes is not None and device_free_bytes < size)


class ParkedInputs:
    """The storages under some tensors, their bytes in host memory until restore(). Whole storages are
    copied (not each tensor's elements), so views of one buffer, expanded tensors, module parameters and
    bytes no tensor shows all come back as they were. A storage that cannot be resized (not the caching
    allocator's) leaves everything as it was."""

    def __init__(self, torch, tensors, release_cache):
        self.torch, self.release_cache = torch, release_cache
        self.storages = {}
        for t in tensors:
            s = storage_of(t)
            self.storages.setdefault(s.data_ptr(), (s, s.nbytes(), t.device))
        self.copies = []
        self.parked = False

    def nbytes(self):
        return sum(n for _, n, _ in self.storages.values())

    def as_bytes(self, storage, nbytes, device):
        return self.torch.empty(0, dtype=self.torch.uint8, device=device).set_(storage, 0, (nbytes,), (1,))

    def overlapping(self):
        """Two storages over one range of memory (memory wrapped twice, not views of one storage): parking
        one would leave the other pointing at freed memory."""
        spans = sorted((ptr, ptr + n) for ptr, (_, n, _) in self.storages.items())
        return any(end > next_start for (_, end), (next_start, _) in zip(spans, spans[1:]))

    def park(self):
        """True when the bytes left the device; False (nothing changed) when a storage cannot be resized,
        two storages overlap or host memory cannot hold the copies."""
        entries = list(self.storages.values())
        if self.overlapping():
            return False
        try:
            copies = [self.as_bytes(s, n, d).to("cpu", copy=True) for s, n, d in entries]
        except (RuntimeError, MemoryError):
            return False
        resized = []
        try:
            for s, nbytes, _ in entries:
                s.resize_(0)
                resized.append(s)
        except RuntimeError:
            self.copy_back(entries[:len(resized)], copies)
            return False
        self.copies, self.parked = copies, True
        self.release_cache()
        return True

    def restore(self):
        if self.parked:
            self.copy_back(list(self.storages.values()), self.copies)
            self.copies, self.parked = [], False

    def copy_back(self, entries, copies):
        for (s, nbytes, device), copy in zip(entries, copies):
            s.resize_(nbytes)
            self.as_bytes(s, nbytes, device).copy_(copy)
