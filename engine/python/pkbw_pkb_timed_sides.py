"""PKB's Python judge: each side's worker as the timing sees it (docs/pkb-interop.md, "Timing"): its
requests, whose failures are the reference's timing worker's or the candidate's own, its timed blocks'
replies validated, the candidate's tree kept still while it is not the side being timed, and the GPU
probe that tells whether another process's kernels held the device.
"""

import contextlib

from pkbw_channel import ProtocolError, close_fds
from pkbw_pkb_worker import CandidateGone, CandidateRaised

FREEZE_TIMEOUT_MS = 5000          # a tree that takes longer to stop is reported, not waited for
PROBE_SPIN_US = 20.0              # the GPU probe kernel's own length


def finite(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value < float("inf")


class TimingWorkerFailed(Exception):
    """The reference's timing worker raised or broke: not the candidate's doing."""


class TimedSide:
    """One side's worker as the timing sees it: requests to the reference's worker that fail are
    TimingWorkerFailed; the candidate's failures stay its own."""

    def __init__(self, name, worker, rank):
        self.name, self.worker, self.rank = name, worker, rank
        self.untrusted = name == "candidate"
        self.outputs = None  # its output slots (Region), when the calls are checked

    def fail(self, error):
        """Raises `error` as this side's failure."""
        if self.untrusted:
            raise error
        detail = error.traceback if isinstance(error, CandidateRaised) else str(error)
        raise TimingWorkerFailed(f"the reference's timing worker on rank {self.rank} failed: {detail}") from error

    def request(self, message, fds=()):
        try:
            return self.worker.request(message, fds)
        except (CandidateRaised, CandidateGone, ProtocolError) as error:
            self.fail(error)

    def send_inputs(self, op, args, fields):
        try:
            reply, fds = self.worker.send_inputs(op, args, fields)
        except (CandidateRaised, CandidateGone, ProtocolError) as error:
            self.fail(error)
        close_fds(fds)
        return reply

    def timed_calls(self, count):
        """One block of `count` calls in the worker; its validated reply."""
        reply = self.request({"op": "timed_calls", "calls": count})
        try:
            return block_reply(reply, count)
        except ProtocolError as error:
            self.fail(error)


def block_reply(reply, count):
    samples = reply.get("samples_ms")
    if not isinstance(samples, list) or len(samples) != count or not all(finite(x) for x in samples):
        raise ProtocolError(f"a timed block's reply without {count} finite non-negative samples")
    if not finite(reply.get("span_ms")) or reply.get("calls") != count:
        raise ProtocolError("a timed block's reply without its span and call count")
    failed = reply.get("failed", [])
    if not isinstance(failed, list) or not all(
            isinstance(f, list) and len(f) == 2 and type(f[0]) is int and 0 <= f[0] < count and isinstance(f[1], str)
            for f in failed[:64]) or len(failed) > 64 or type(reply.get("failed_count", 0)) is not int:
        raise ProtocolError("a timed block's reply with a malformed list of failed calls")
    values = reply.get("values")
    if values is not None and (not isinstance(values, list) or len(values) != count):
        raise ProtocolError(f"a timed block's reply without {count} rows of output values")
    return {"samples_ms": [float(x) for x in samples], "span_ms": float(reply["span_ms"]), "calls": count,
            "failed": {k: text[:500] for k, text in failed}, "failed_count": reply.get("failed_count", 0),
            "values": values}


class Stillness:
    """The candidate's process tree frozen (its container) from entry to exit, but inside thawed(): its
    own calls. A freeze that fails is counted; the reference's blocks then say frozen false."""

    def __init__(self, side):
        self.container = side.worker.container if side is not None else None
        self.frozen, self.failures = False, 0

    def __enter__(self):
        self.freeze()
        return self

    def __exit__(self, *exc):
        self.thaw()
        return False

    def freeze(self):
        if self.container is not None and not self.frozen:
            self.frozen = True  # thawed again whatever part of it stopped
            if not self.container.freeze(FREEZE_TIMEOUT_MS):
                self.failures += 1

    def thaw(self):
        if self.container is not None and self.frozen:
            self.container.thaw(FREEZE_TIMEOUT_MS)
            self.frozen = False

    @contextlib.contextmanager
    def thawed(self, side):
        """Runs the body with the candidate thawed when `side` is the candidate's."""
        if not side.untrusted:
            yield
            return
        self.thaw()
        try:
            yield
        finally:
            self.freeze()

    def cpu_ms(self):
        return self.container.cpu_ms() if self.container is not None else 0.0


class GpuProbe:
    """A short kernel (torch.cuda._sleep) the judge times with events on its own device: far longer than
    on an idle device, another process's kernels held the GPU."""

    def __init__(self, torch):
        self.torch = torch
        self.start, self.end = (torch.cuda.Event(enable_timing=True) for _ in range(2))
        self.cycles = 1_000_000
        self.us()  # the first launch's own costs
        self.cycles = max(int(PROBE_SPIN_US * 1_000_000 / max(self.us(), 1e-3)), 1)

    def us(self):
        self.start.record()
        self.torch.cuda._sleep(self.cycles)
        self.end.record()
        self.end.synchronize()
        return self.start.elapsed_time(self.end) * 1e3
