#!/usr/bin/env python3
"""pkbw's rank program for ParallelKernelBench (PKB) Python solutions: the judge.

The pkbw launcher starts one of these per rank, exactly as it starts pkbw-rank (docs/engine.md, "Rank
program contract"): RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT in the environment, the
JSON-lines events written to the pipe PKBW_CONTROL_FD, the configuration file given by --config. The
configuration's "pkb" object names the PKB checkout, the problem's reference and the candidate.

Per rank, two processes. This one, the judge, keeps the control pipe, initialises the process group
as PKB's backend init does, imports PKB's reference, builds every trial's inputs with the checkout's
own create_input_tensor, runs the reference, decides with PKB's rule (torch.allclose on .float(), rtol
relative to the candidate, recursing over tuples, lists and dicts) and writes both outputs as
safetensors; the launcher re-compares those files with pkbw's comparison (core/compare.h) for the full
error statistics. The candidate's module is imported only by a second process, pkbw_pkb_candidate.py,
started here (through the optional wrapper prefix) with no control pipe, no rendezvous token and a
process group of its own: it gets each trial's inputs, returns its outputs, and runs the candidate's
timing loops when the judge asks (PKB's protocol and pkbw's ABBA blocks, docs/pkb-interop.md). So the
candidate cannot write events, call the reference or read the reference's outputs from memory.

Exit codes follow pkbw-rank: 0 finished, 3 environment (no torch, no GPU, process group, the
candidate's process could not start), 4 the solution raised, broke the CUDA context or its process
died, 5 internal error.
"""

import argparse
import ctypes
import json
import os
import select
import shlex
import signal
import socket
import struct
import subprocess
import sys
import time
import traceback

import pkbw_containment as containment
import pkbw_pkb_candidate as channel
from pkbw_pkb_candidate import ChannelClosed, ProtocolError

EXIT_OK, EXIT_ENVIRONMENT, EXIT_SOLUTION, EXIT_INTERNAL = 0, 3, 4, 5
CANDIDATE_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pkbw_pkb_candidate.py")
PR_SET_DUMPABLE, PR_SET_CHILD_SUBREAPER = 4, 36
# The teardown: how long the candidate's process may take to leave its group, then to exit (together
# well inside the launcher's 30 s teardown deadline).
CANDIDATE_LEAVE_S, CANDIDATE_EXIT_S = 15.0, 5.0
# Where judge rank 0 leaves the candidates' port in the judges' store.
CANDIDATE_PORT_KEY = "pkbw/candidate_master_port"


class Events:
    """The control pipe: one JSON object per line (core/protocol.h is the reader)."""

    def __init__(self, rank, fallback_path):
        fd = os.environ.get("PKBW_CONTROL_FD", "")
        if fd.isdigit():
            self.stream = os.fdopen(int(fd), "w", buffering=1, closefd=False)
        else:
            self.stream = open(fallback_path, "a", buffering=1)
        self.rank = rank

    def send(self, event, **fields):
        body = {"event": event, "rank": self.rank}
        body.update(fields)
        self.stream.write(json.dumps(body, allow_nan=False, default=str) + "\n")
        self.stream.flush()

    def phase(self, phase, trial=-1):
        self.send("phase", phase=phase, trial=trial)

    def error(self, phase, kind, message):
        self.send("error", phase=phase, kind=kind, message=message[-4000:])


# ---------------------------------------------------------------------------------------------------
# Outputs: flattened to PKB's comparison paths (core/outputs.h) and written as safetensors
# (docs/formats.md). Written by hand so that no package beyond torch is needed.

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


def remove_stale_locks(folder):
    """load_inline guards a build with a 'lock' file and waits forever for it to go away; a rank killed
    mid-compile (a deadline, Ctrl-C) leaves it behind. The folder is this rank's and this solution's
    alone (pkbw names it by the file's hash and the rank), so a lock found at start-up is stale."""
    if not os.path.isdir(folder):
        return
    for extension in os.listdir(folder):
        lock = os.path.join(folder, extension, "lock")
        if os.path.exists(lock):
            os.remove(lock)


def versions(torch, cuda):
    nccl = ""
    if cuda:
        try:
            v = torch.cuda.nccl.version()
            nccl = ".".join(str(x) for x in v) if isinstance(v, tuple) else str(v)
        except Exception:
            nccl = "unknown"
    return nccl


# ---------------------------------------------------------------------------------------------------
# The candidate's process, seen from the judge.

class ConfigError(Exception):
    pass


def candidate_wrapper(pkb, config_path):
    """The argv prefix the candidate's process is started through (a sandbox such as pkbw-sandbox):
    the config's pkb.candidate_wrapper (a list of strings), else $PKBW_PKB_CANDIDATE_WRAPPER (shell
    words), else none. The wrapper must exec the rest of its argv keeping the --channel-fd descriptor."""
    if "candidate_wrapper" in pkb:
        prefix = pkb["candidate_wrapper"]
        if not isinstance(prefix, list) or not all(isinstance(x, str) and x for x in prefix):
            raise ConfigError(f"{config_path}: pkb.candidate_wrapper must be a list of non-empty strings, "
                              f"not {json.dumps(prefix)[:200]}")
        return list(prefix)
    text = os.environ.get("PKBW_PKB_CANDIDATE_WRAPPER", "")
    try:
        return shlex.split(text)
    except ValueError as error:
        raise ConfigError(f"$PKBW_PKB_CANDIDATE_WRAPPER ({text[:200]!r}): {error}") from None


def candidate_environment(extensions_folder):
    """pkbw's own variables (the control pipe's number, the rendezvous token and port, the launcher's
    pid) and the judges' MASTER_PORT stay with the judge; the candidates' port comes with "init"."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PKBW_") and k != "MASTER_PORT"}
    if extensions_folder:
        env["TORCH_EXTENSIONS_DIR"] = extensions_folder
    return env


_libc = ctypes.CDLL(None, use_errno=True)


def _start_in(container):
    """What runs in the child between fork and exec. The judge starts its candidate before it imports
    torch or starts a process group, so no other thread exists to hold a lock the child would need."""

    def start():
        _libc.prctl(channel.PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        # Into the candidate's container before anything of it runs, so that all it starts is inside.
        container.join_in_child()

    return start


class CandidateRaised(Exception):
    """The candidate's process answered a request with a failure (its fields: kind, type, message,
    traceback)."""

    def __init__(self, reply):
        def text(name, limit):
            value = reply.get(name)
            return value[:limit] if isinstance(value, str) else ""

        self.kind = reply.get("kind") if reply.get("kind") in (
            "solution_error", "cuda_error", "invalid_output", "environment", "rendezvous") else "solution_error"
        self.type = text("type", 100) or "Exception"
        self.message = text("message", 4000)
        self.traceback = text("traceback", 8000) or self.message
        super().__init__(f"{self.type}: {self.message}")


class CandidateGone(Exception):
    """The candidate's process ended (or closed its channel) while the judge waited for it."""


class Candidate:
    """A worker process of this program's (pkbw_pkb_candidate.py) seen from the judge: the candidate's,
    or the reference's timing worker (subtree: its container's tree, without cgroups, is its own
    subtree only)."""

    def __init__(self, wrapper, argv, env, label="cand", subtree=False):
        parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self.wrapper = wrapper
        # Its whole process tree, frozen, measured and killed as one (pkbw_containment.py).
        self.container = containment.ProcessContainer(label, subtree)
        try:
            self.argv = wrapper + argv + ["--channel-fd", str(child.fileno())]
            # close_fds: of the judge's descriptors only 0-2 (stdin /dev/null, the rank's log pipes) and
            # the channel reach the candidate; the control pipe does not.
            self.process = subprocess.Popen(self.argv, env=env, stdin=subprocess.DEVNULL, close_fds=True,
                                            pass_fds=(child.fileno(),), preexec_fn=_start_in(self.container))
        except BaseException:
            parent.close()
            self.container.close()
            raise
        finally:
            child.close()
        self.container.set_root(self.process.pid)
        self.channel = channel.Channel(parent)
        self.pid = self.process.pid
        try:
            self.pidfd = os.pidfd_open(self.pid)
        except (AttributeError, OSError):
            self.pidfd = None
        self.ipc = None
        self.torch = None
        self.device = None
        # Each request carries a number its reply must echo: bytes the candidate's code writes into
        # the socket on its own (a reply queued ahead of the request) are refused, not taken as one.
        self.sequence = 0

    def ended(self):
        """How the process ended, in words; kills it first when it merely closed its channel."""
        try:
            code = self.process.wait(timeout=2)
        except subprocess.TimeoutExpired:
            self.kill()
            return "closed its channel to the judge (it was killed)"
        if code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"signal {-code}"
            return f"was killed by {name}"
        return f"exited with code {code}"

    def wait_readable(self, timeout=None):
        """Until the channel has data, or raise CandidateGone when the process ends first (a grandchild
        holding the socket open would otherwise hide its end)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        poller = select.poll()
        poller.register(self.channel.fileno(), select.POLLIN)
        if self.pidfd is not None:
            poller.register(self.pidfd, select.POLLIN)
        while True:
            left = None if deadline is None else max(deadline - time.monotonic(), 0)
            wait_ms = 250 if self.pidfd is None else (None if left is None else int(left * 1000))
            if self.pidfd is None and left is not None:
                wait_ms = min(wait_ms, int(left * 1000))
            ready = {fd for fd, _ in poller.poll(wait_ms)}
            if self.channel.fileno() in ready:
                return True
            if (self.pidfd is not None and self.pidfd in ready) or self.process.poll() is not None:
                if select.select([self.channel.fileno()], [], [], 0)[0]:
                    return True
                raise CandidateGone(self.ended())
            if deadline is not None and time.monotonic() >= deadline:
                return False

    def send(self, message, fds=()):
        self.sequence += 1
        try:
            self.channel.send(dict(message, seq=self.sequence), fds)
        except OSError:  # EPIPE, ECONNRESET: the process is gone
            raise CandidateGone(self.ended()) from None

    def reply(self, timeout=None):
        """The next reply as (message, fds); raises CandidateRaised, CandidateGone, ProtocolError."""
        if not self.wait_readable(timeout):
            raise TimeoutError(f"no answer within {timeout} s")
        try:
            message, fds = self.channel.recv()
        except (ChannelClosed, ConnectionError):
            raise CandidateGone(self.ended()) from None
        if message.get("seq") != self.sequence:
            channel.close_fds(fds)
            raise ProtocolError(f"a reply numbered {str(message.get('seq'))[:20]} to request {self.sequence}")
        if message.get("ok") is not True:
            channel.close_fds(fds)
            raise CandidateRaised(message)
        return message, fds

    def request(self, message, fds=()):
        self.send(message, fds)
        reply, reply_fds = self.reply()
        channel.close_fds(reply_fds)
        return reply

    # Values both ways: host tensors in one memfd, CUDA tensors copied by the judge into buffers the
    # candidate's process allocated (see pkbw_pkb_candidate.py for why the judge exports nothing).

    def send_inputs(self, op, args, fields):
        torch = self.torch
        host, device, leaves = [], [], []

        def tensor(t, path):
            t = t.detach()
            (device if t.is_cuda else host).append(t)
            leaves.append(("cuda" if t.is_cuda else "host", len(device if t.is_cuda else host) - 1))
            return len(leaves) - 1

        tree = channel.encode_value(list(args), torch, tensor, "input")
        if device:
            wanted = [{"dtype": str(t.dtype).split(".")[-1], "shape": list(t.shape),
                       "stride": channel.dense_layout(t)} for t in device]
            given = self.request({"op": "alloc", "tensors": wanted}).get("tensors")
            if not isinstance(given, list) or len(given) != len(device):
                raise ProtocolError("an alloc reply without one description per input")
            opened = channel.OpenedCuda(self.ipc, torch, self.device)
            try:
                for t, want, got in zip(device, wanted, given):
                    nbytes = channel.span_elements(want["shape"], want["stride"]) * t.element_size()
                    if nbytes == 0:
                        continue
                    if not isinstance(got, dict):
                        raise ProtocolError("an alloc reply entry that is not an object")
                    span = opened.span(got.get("handle"), got.get("offset"), nbytes)
                    span.view(t.dtype).as_strided(want["shape"], want["stride"]).copy_(t)
            finally:
                opened.close()
        fd, host_specs = channel.pack_host(host, torch, seal=False, keep_layout=True)
        specs = [host_specs[i] if where == "host" else {"transport": "staged", "index": i} for where, i in leaves]
        message = dict(fields, op=op, args=tree, tensors=specs)
        try:
            self.send(message, [fd] if fd is not None else [])
        finally:
            if fd is not None:
                os.close(fd)
        return self.reply()

    def take_outputs(self, reply, fds):
        """The outputs of a call reply, in the judge's hands: host tensors as read-only views of the
        sealed memfd, CUDA tensors copied out of the candidate's memory."""
        torch = self.torch
        mapping, size = None, 0
        try:
            if len(fds) > 1:
                raise ProtocolError(f"{len(fds)} file descriptors on one reply (one memfd at most)")
            if fds:
                mapping, size = channel.map_host(fds[0], writable=False, require_sealed=True)
        finally:
            channel.close_fds(fds)
        specs = reply.get("tensors")
        if not isinstance(specs, list):
            raise ProtocolError("a call reply without a tensor list")
        opened = channel.OpenedCuda(self.ipc, torch, self.device) if self.ipc is not None else None

        def tensor(index):
            if type(index) is not int or not 0 <= index < len(specs) or not isinstance(specs[index], dict):
                raise ProtocolError(f"a tensor reference {str(index)[:20]} outside the reply's tensor list")
            spec = specs[index]
            if spec.get("transport") == "memfd":
                return channel.host_tensor(mapping, size, spec, torch, contiguous_only=True)
            if spec.get("transport") == "cuda" and opened is not None:
                return opened.output(spec).clone()
            raise ProtocolError(f"a tensor transport {str(spec.get('transport'))[:20]!r}")

        try:
            return channel.decode_value(reply.get("result"), torch, tensor)
        finally:
            if opened is not None:
                opened.close()

    def freeze(self, timeout_ms):
        """Stops its whole tree (False when not all of it stopped within timeout_ms)."""
        return self.container.freeze(timeout_ms)

    def thaw(self, timeout_ms):
        return self.container.thaw(timeout_ms)

    def tree_cpu_ms(self):
        return self.container.cpu_ms()

    def kill(self):
        if self.process.poll() is None:
            try:
                self.process.kill()
            except OSError:
                pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            print(f"pkbw_pkb_rank: the candidate's process {self.pid} did not die within 10 s of SIGKILL",
                  file=sys.stderr)
        if self.pidfd is not None:
            os.close(self.pidfd)
            self.pidfd = None
        self.channel.sock.close()


def finite(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value < float("inf")


class RemoteTiming:
    """The candidate's timing loops, run by its process. The judge adds what it sees itself (the
    fields core/timing_checks.h defines, which the launcher turns into invalid_timing): its own clock
    around each timed request, the judges aligned by a barrier first so that the candidates' barrier
    inside is short (judge_ms), and the process's CPU time in a window after the block in which it
    should be idle (idle_cpu_ms over idle_window_ms)."""

    IDLE_WINDOW_S = 0.05

    def __init__(self, candidate, barrier):
        self.candidate, self.barrier = candidate, barrier

    def pkb_warmup(self, groups, warmup):
        self.candidate.request({"op": "pkb_warmup", "groups": groups, "warmup": warmup})

    def timed(self, message, iterations):
        self.barrier()
        start = time.perf_counter()
        reply = self.candidate.request(message)
        judge_ms = (time.perf_counter() - start) * 1e3
        samples = reply.get("samples_ms")
        if not isinstance(samples, list) or len(samples) != iterations or not all(finite(x) for x in samples):
            raise ProtocolError(f"a timing reply without {iterations} finite non-negative samples")
        if not all(finite(reply.get(k)) for k in ("span_ms", "host_ms", "whole_ms")) or \
                type(reply.get("calls")) is not int:
            raise ProtocolError("a timing reply without its bracket (span_ms, host_ms, whole_ms, calls)")
        extra = {"judge_ms": judge_ms, "span_ms": float(reply["span_ms"]), "host_ms": float(reply["host_ms"]),
                 "whole_ms": float(reply["whole_ms"]), "calls": reply["calls"]}
        before, window_start = containment.process_cpu_ms(self.candidate.pid), time.perf_counter()
        time.sleep(self.IDLE_WINDOW_S)
        after, window_ms = containment.process_cpu_ms(self.candidate.pid), (time.perf_counter() - window_start) * 1e3
        if before >= 0 and after >= 0:
            extra.update(idle_cpu_ms=max(after - before, 0.0), idle_window_ms=window_ms)
        return [float(x) for x in samples], extra

    def pkb_timed(self, iterations):
        return self.timed({"op": "pkb_timed", "iterations": iterations}, iterations)

    def rotation(self, count):
        self.candidate.request({"op": "rotation", "count": count})

    def block(self, iterations):
        return self.timed({"op": "block", "iterations": iterations}, iterations)


class LocalTiming(channel.Timing):
    """The reference's loops, here; the same code as the candidate's process runs."""

    @staticmethod
    def split(result):
        return result["samples_ms"], {k: result[k] for k in ("span_ms", "host_ms", "calls")}

    def pkb_timed(self, iterations):
        return self.split(super().pkb_timed(iterations))

    def block(self, iterations):
        return self.split(super().block(iterations))


class Perf:
    """PKB's protocol as utils/performance.py runs it, and pkbw's (docs/perf.md): per block, ranks
    start together, each sample brackets one call, sides alternate ABBA, inputs rotate past 3x L2.
    Each side's loops run in the process that owns its kernels; the judge plans them (groups, copies)
    from its own copy of the inputs and writes the events."""

    def __init__(self, rank_state, options):
        self.s = rank_state
        self.o = options
        self.timed, self.blocks = 0, 0

    def count_blocks(self, sides):
        """The perf phase's block count (PKB's series of each side, then pkbw's blocks), known before the
        first, as engine/runtime/perf_runner.cpp counts them for perf_progress."""
        pairs = self.o.get("pairs", 5)
        self.blocks = (sides if self.o.get("pkb", True) else 0) + \
            ((pairs if sides == 1 else 2 * pairs) if self.o.get("pkbw", True) and sides else 0)

    def progress(self, protocol, side):
        self.timed += 1
        self.s.events.send("perf_progress", block=self.timed, blocks=self.blocks, protocol=protocol, side=side)

    def pkb(self, name, timing, args):
        torch, o = self.s.torch, self.o
        _, groups, size = channel.pkb_plan(args, self.s.l2_bytes, torch)
        warmup, iterations = o.get("pkb_warmup", 500), o.get("pkb_iterations", 100)
        timing.pkb_warmup(groups, warmup)
        samples, extra = timing.pkb_timed(iterations)
        self.s.events.send("perf_result", protocol="pkb", side=name, block=0, samples_ms=samples,
                           num_input_groups=groups, l2_cache_size_bytes=self.s.l2_bytes, timed_tensor_bytes=size,
                           **extra)
        self.progress("pkb", name)

    def pkbw(self, sides):
        """sides: [(name, timing, args)], reference first."""
        o = self.o
        prepared = []
        for name, timing, args in sides:
            count, size = channel.rotation_plan(args, self.s.l2_bytes, o.get("rotation", "copies"), self.s.torch)
            timing.rotation(count)
            prepared.append((name, timing, count, size))
        for name, timing, _, _ in prepared:
            if o.get("warmup", 50) > 0:
                timing.block(o.get("warmup", 50))
        pairs, iterations = o.get("pairs", 5), o.get("iterations", 100)
        order = []
        for p in range(pairs):  # core/perf_stats.cpp block_order: ABBA
            order += [0, 1] if p % 2 == 0 else [1, 0]
        for b, which in enumerate(order):
            if len(prepared) == 1:
                if b >= pairs:
                    break
                which = 0
            name, timing, count, size = prepared[which]
            samples, extra = timing.block(iterations)
            self.s.events.send("perf_result", protocol="pkbw", side=name, block=b, samples_ms=samples,
                               input_copies=count, copy_bytes=size, l2_cache_size_bytes=self.s.l2_bytes,
                               repeat=1, rotation=o.get("rotation", "copies"), **extra)
            self.progress("pkbw", name)


# ---------------------------------------------------------------------------------------------------

class RankState:
    pass


class SolutionFailed(Exception):
    pass


class InvalidOutput:
    """A trial's candidate output that its process could not describe to the judge (the reason)."""

    def __init__(self, message):
        self.message = message


def kill_descendants(root):
    """SIGKILLs every descendant of root and reaps those re-parented to it; [(pid, command)]. The judge
    is a child subreaper, so whatever the candidate's process started, in any session, is here: the
    second sweep after the candidate's container, for a process that left it."""
    killed = []
    for process in containment.below(containment.all_processes(), root):
        try:
            os.kill(process.pid, signal.SIGKILL)
            killed.append((process.pid, process.command or "?"))
        except OSError:
            pass
    deadline = time.monotonic() + 2
    while killed and time.monotonic() < deadline:
        try:
            reaped, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if reaped == 0:
            time.sleep(0.01)
    return killed


class Leftovers:
    """What was left of the candidate's tree besides its own process."""

    def __init__(self, killed=(), count=0, escaped=(), groups=()):
        self.killed = list(killed)    # [(pid, command)]: each was running and is gone
        self.count = count            # processes found left, at least (killed may name fewer)
        self.escaped = list(escaped)  # [(pid, command)] still running: they could not be killed
        self.groups = list(groups)    # process groups killed whole, none of their processes seen


class Resources:
    """What main() must release whatever run() returns or raises: the workers' processes and anything
    the candidate's left behind."""
    candidate = None
    reference = None  # the reference's timing worker

    def release(self):
        """Kills the reference's timing worker with its container's tree (trusted: nothing it leaves is
        reported), then the candidate's process, its container's tree, then (a second sweep) anything
        below the judge; removes the containers. Leftovers, the candidate's own process not counted."""
        if self.reference is not None:
            reference, self.reference = self.reference, None
            reference.container.close()  # while its tree still hangs below it (the fallback's scan)
            reference.kill()
        if self.candidate is None:
            return Leftovers()
        candidate, self.candidate = self.candidate, None
        candidate.kill()
        report = candidate.container.kill_all(3000)
        killed = [(pid, command) for pid, command in report.named if pid != candidate.pid]
        swept = [(pid, command) for pid, command in kill_descendants(os.getpid()) if pid != candidate.pid]
        candidate.container.close()
        count = max(report.count_before, len(killed)) + len(report.groups) + len(swept)
        return Leftovers(killed + swept, count, report.survivors, report.groups)


def keep_out_of_reach():
    """Non-dumpable: processes of the same user without CAP_SYS_PTRACE can no longer open
    /proc/<judge>/fd/* (the control pipe), read /proc/<judge>/mem or environ, or ptrace the judge. Root
    keeps all of these; that is for the wrapper (a sandbox) to take away. PKBW_PKB_JUDGE_DUMPABLE=1
    leaves the judge as it was (for a debugger, or if a library needs to ptrace-access its peers)."""
    if os.environ.get("PKBW_PKB_JUDGE_DUMPABLE") != "1":
        _libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    _libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)  # the candidate's orphans come back here


def run(args, resources):
    with open(args.config) as f:
        config = json.load(f)
    pkb = config["pkb"]
    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    local_rank = int(os.environ.get("LOCAL_RANK", rank))
    out_dir = config["output_dir"]
    events = Events(rank, os.path.join(out_dir, f"rank_{rank}.events.jsonl"))
    state = RankState()
    state.events, state.rank = events, rank
    keep_out_of_reach()
    cuda = pkb.get("device", "cuda") == "cuda"
    state.cuda = cuda
    run_reference = config.get("mode") != "dryrun" or config.get("dryrun_side") == "reference"
    run_candidate = bool(pkb.get("solution_file")) and (
        config.get("mode") != "dryrun" or config.get("dryrun_side") != "reference")

    # PKB's worker: Hopper-only JIT unless set, and a torch extensions folder per rank so that ranks
    # never race on one .so (kept across runs under pkbw's cache so warm runs do not recompile). The
    # candidate's JIT builds run in its process; the judge's folder is apart, should a reference JIT.
    os.environ.setdefault("TORCH_CUDA_ARCH_LIST", "9.0")
    candidate_folder = None
    if pkb.get("extensions_dir"):
        candidate_folder = os.path.join(pkb["extensions_dir"], f"pkb_rank_{rank}")
        os.environ["TORCH_EXTENSIONS_DIR"] = os.path.join(pkb["extensions_dir"], f"pkb_judge_{rank}")
        remove_stale_locks(candidate_folder)
        remove_stale_locks(os.environ["TORCH_EXTENSIONS_DIR"])
    sys.path.insert(0, pkb["checkout"])

    # The candidate's process first, before torch or a process group starts threads here (its death
    # signal is armed between fork and exec); its torch import overlaps the judge's.
    candidate = None
    if run_candidate:
        try:
            prefix = candidate_wrapper(pkb, args.config)
        except ConfigError as error:
            events.error("start", "environment", str(error))
            return EXIT_ENVIRONMENT
        # --cuda-device: its CUDA context is made while the judge starts too.
        argv = [sys.executable, CANDIDATE_SCRIPT] + (["--cuda-device", str(local_rank)] if cuda else [])
        try:
            candidate = resources.candidate = Candidate(prefix, argv, candidate_environment(candidate_folder),
                                                        f"cand-r{rank}")
        except OSError as error:
            events.error("start", "environment",
                         f"cannot start the candidate's process {json.dumps(prefix + argv)}: {error}"
                         + (" (the wrapper prefix comes from pkb.candidate_wrapper or $PKBW_PKB_CANDIDATE_WRAPPER)"
                            if prefix else ""))
            return EXIT_ENVIRONMENT

    try:
        import torch
        import torch.distributed as dist
        from torch.distributed.rendezvous import rendezvous
    except Exception as error:  # noqa: BLE001 - any import failure is the environment's
        events.error("start", "environment", f"{sys.executable} cannot import torch: {error}")
        return EXIT_ENVIRONMENT
    state.torch = torch
    if cuda:
        if not torch.cuda.is_available() or torch.cuda.device_count() <= local_rank:
            events.error("start", "environment",
                         f"rank {rank} needs CUDA device {local_rank}; torch sees "
                         f"{torch.cuda.device_count() if torch.cuda.is_available() else 0}")
            return EXIT_ENVIRONMENT
        torch.cuda.set_device(local_rank)
        device = torch.device("cuda", local_rank)
        properties = torch.cuda.get_device_properties(device)
        state.l2_bytes = int(getattr(properties, "L2_cache_size", 0) or 50 * 2**20)
        device_name = properties.name
    else:
        device = torch.device("cpu")
        state.l2_bytes = 32 * 2**20
        device_name = "host"
    nccl = versions(torch, cuda)
    events.send("hello", world_size=world, pid=os.getpid(), host=socket.gethostname(),
                backend="cuda" if cuda else "host", device=device_name, nccl_runtime=nccl, nccl_compiled=nccl,
                runtime=str(torch.version.cuda or ""), torch=torch.__version__, python=sys.version.split()[0],
                program="pkbw_pkb_rank.py", candidate_pid=candidate.pid if candidate else None)
    if candidate is not None:
        # What the run's sandbox warning reads (docs/engine.md, "The sandbox"): this program applies no
        # sandbox of its own; a wrapper may, but pkbw cannot tell what it enforces.
        sandbox = (f"wrapper {json.dumps(candidate.wrapper)[:200]}: pkbw does not know what it enforces"
                   if candidate.wrapper else "no sandbox (PKB's Python candidates run as this user, with "
                   "this user's files; pkb.candidate_wrapper or $PKBW_PKB_CANDIDATE_WRAPPER can add one)")
        events.send("candidate", stage="started", pid=candidate.pid, sandbox=sandbox, landlock_abi=0,
                    containment=candidate.container.describe())

    events.phase("rendezvous")
    init_sent = None
    try:
        os.environ["LOCAL_RANK"] = str(local_rank)
        # torch's env:// rendezvous, as init_process_group runs it, taken apart so that the candidates'
        # port crosses the judges' store before the judges' group starts: the two groups (two NCCL
        # initialisations on a GPU) then come up at the same time.
        store, _, _ = next(rendezvous("env://", rank, world))
        if candidate is not None:
            if rank == 0:
                # The candidates' store listens before any other rank's candidate looks for it.
                with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
                    probe.bind(("", 0))
                    free_port = probe.getsockname()[1]
                try:
                    reply = candidate.request({"op": "store", "host": os.environ.get("MASTER_ADDR", "127.0.0.1"),
                                               "port": free_port, "world_size": world})
                    if type(reply.get("port")) is not int or not 0 < reply["port"] < 65536:
                        raise ProtocolError(f"a store port {str(reply.get('port'))[:20]}")
                except (CandidateRaised, CandidateGone, ProtocolError) as error:
                    init_sent = error
                    reply = {"port": 0}  # the other ranks' candidates fail to connect; this rank reports
                store.set(CANDIDATE_PORT_KEY, str(reply["port"]))
            port = int(store.get(CANDIDATE_PORT_KEY))
            if init_sent is None:
                try:
                    candidate.send({"op": "init", "rank": rank, "world_size": world, "local_rank": local_rank,
                                    "device": "cuda" if cuda else "cpu",
                                    "master_addr": os.environ.get("MASTER_ADDR", "127.0.0.1"), "master_port": port,
                                    "checkout": pkb["checkout"]})
                except CandidateGone as error:
                    init_sent = error
        kwargs = {"backend": "nccl" if cuda else "gloo", "store": dist.PrefixStore("default_pg", store),
                  "rank": rank, "world_size": world}
        if cuda:
            try:
                dist.init_process_group(**kwargs, device_id=device)
            except TypeError:
                dist.init_process_group(**kwargs)
        else:
            dist.init_process_group(**kwargs)
    except Exception as error:  # noqa: BLE001
        events.error("rendezvous", "rendezvous", f"init_process_group failed: {error}")
        return EXIT_ENVIRONMENT
    state.barrier = dist.barrier

    def candidate_failed(phase, trial, error, where):
        """Reports a failed request to the candidate's process at once (error event and, in a trial,
        the trial's rank_result), as the in-process candidate's exceptions were."""
        if isinstance(error, CandidateRaised):
            kind = "cuda_error" if error.kind == "cuda_error" else "solution_error"
            if error.kind == "invalid_output":
                text = f"the candidate's output on rank {rank}, trial {trial} cannot be taken: {error.message}"
                status, short = "invalid_output", f"invalid output: {error.message[:500]}"
            else:
                text = f"the candidate raised on rank {rank}, {where}:\n{error.traceback}"
                status = "crash" if kind == "cuda_error" else "error"
                short = f"candidate raised {error.type}: {error.message[:500]}"
        elif isinstance(error, CandidateGone):
            kind, status = "solution_error", "crash"
            text = f"the candidate's process on rank {rank} {error} ({where})"
            short = f"the candidate's process {error}"
        else:
            kind, status = "solution_error", "invalid_output"
            text = f"the candidate's process on rank {rank} broke the channel's rules ({where}): {error}"
            short = f"the candidate's process sent a bad message: {str(error)[:500]}"
        left = resources.release()
        if left.count:
            text += f"; killed {left.count} process(es) it left"
        events.error(phase, kind, text)
        if trial is not None:
            events.send("rank_result", trial=trial, status=status, message=short, tensors=[],
                        guard_violations=[], mutated_inputs=[], outputs={})

    if candidate is not None:
        # The candidates' own group, on the port judge rank 0 picked: their answer to "init".
        candidate.torch, candidate.device = torch, device
        wrapped = f" (started as {json.dumps(candidate.wrapper)} + the candidate)" if candidate.wrapper else ""
        try:
            if cuda:
                torch.zeros(1, device=device)  # the primary context, current on this thread
                candidate.ipc = channel.CudaIpc()
                candidate.ipc.require_context()
            if init_sent is not None:
                raise init_sent
            _, fds = candidate.reply()
            channel.close_fds(fds)
        except CandidateRaised as error:
            events.error("rendezvous", error.kind if error.kind in ("environment", "rendezvous") else "environment",
                         f"the candidate's process on rank {rank}: {error.message}")
            return EXIT_ENVIRONMENT
        except CandidateGone as error:
            events.error("rendezvous", "environment",
                         f"the candidate's process on rank {rank} {error} before it joined its process group{wrapped}")
            return EXIT_ENVIRONMENT
        except ProtocolError as error:
            events.error("rendezvous", "environment",
                         f"the candidate's process on rank {rank} broke the channel's rules at its start: {error}")
            return EXIT_ENVIRONMENT
        except OSError as error:
            events.error("rendezvous", "environment", f"the CUDA driver's IPC on rank {rank}: {error}")
            return EXIT_ENVIRONMENT

    events.phase("compile")
    load_failed = None
    if candidate is not None:
        try:
            candidate.send({"op": "load", "solution_file": pkb["solution_file"]})  # loads while the judge does
        except CandidateGone as error:
            load_failed = error
    try:
        from utils.input_output_tensors import create_input_tensor
        reference = channel.load_module("pkbw_pkb_reference", pkb["reference_file"]).solution
    except Exception:  # noqa: BLE001 - the checkout is broken: not the candidate's fault
        events.error("compile", "environment", "the PKB checkout's reference or inputs failed to load:\n"
                     + traceback.format_exc())
        return EXIT_ENVIRONMENT
    if candidate is not None:
        try:
            if load_failed is not None:
                raise load_failed
            _, fds = candidate.reply()
            channel.close_fds(fds)
        except CandidateRaised as error:
            events.error("compile", "solution_error", "the candidate failed to import:\n" + error.traceback)
            return EXIT_SOLUTION
        except (CandidateGone, ProtocolError) as error:
            candidate_failed("compile", None, error, "importing the candidate")
            return EXIT_SOLUTION

    dtype = getattr(torch, pkb["torch_dtype"])
    problem_id = int(pkb["problem_id"])
    shape = (int(config["m"]), int(config["n"]))
    atol, rtol = float(config["atol"]), float(config["rtol"])
    trials = int(config["trials"])

    def inputs(trial):
        return tuple(create_input_tensor(rank, world, problem_id, shape, dtype, trial, device=device))

    def call_candidate(trial, first, x):
        # The first call of a side may JIT-compile (load_inline): it runs under the compile deadline.
        events.phase("compile" if first else "candidate", trial)
        try:
            reply, fds = candidate.send_inputs("call", x, {"trial": trial})
            return candidate.take_outputs(reply, fds)
        except CandidateRaised as error:
            if error.kind == "invalid_output":
                # The solution returned; only its value cannot be described. A verdict, like a
                # mismatch: this rank still takes part in the reference's collectives and the stop.
                return InvalidOutput(error.message)
            candidate_failed("candidate", trial, error, f"trial {trial}")
            raise SolutionFailed() from error
        except (CandidateGone, ProtocolError) as error:
            candidate_failed("candidate", trial, error, f"trial {trial}")
            raise SolutionFailed() from error

    def call_reference(trial, first, x):
        events.phase("compile" if first else "reference", trial)
        try:
            result = reference(*x)
            if cuda:
                torch.cuda.synchronize()
            return result
        except Exception as error:  # noqa: BLE001
            text = traceback.format_exc()
            kind = channel.error_kind(error)
            events.error("reference", kind, f"the reference raised on rank {rank}, trial {trial}:\n{text}")
            events.send("rank_result", trial=trial, status="crash" if kind == "cuda_error" else "error",
                        message=f"reference raised {type(error).__name__}: {str(error)[:500]}", tensors=[],
                        guard_violations=[], mutated_inputs=[], outputs={})
            raise SolutionFailed() from error

    def traced_pass(trace, x):
        """The traced pass (docs/tracing.md), after correctness: each side profiles its own iterations
        (channel.profile_iterations), the reference here, the candidate in its process. A profiler that
        cannot record is said on stderr and costs only the trace; a side that raises fails the run."""
        events.phase("trace", 0)
        folder, iterations = str(trace.get("dir", os.path.join(out_dir, "trace"))), int(trace.get("iterations", 10))
        os.makedirs(os.path.join(folder, "candidate"), exist_ok=True)
        if run_reference:
            try:
                channel.profile_iterations(torch, cuda, dist.barrier, reference, x, iterations,
                                           os.path.join(folder, f"rank_{rank}.reference.torch.json"))
            except channel.TraceUnavailable as error:
                print(f"pkbw_pkb_rank: rank {rank}: no reference trace: {error}", file=sys.stderr)
            except Exception as error:  # noqa: BLE001
                events.error("trace", channel.error_kind(error),
                             f"the reference raised on rank {rank} in the traced pass:\n{traceback.format_exc()}")
                return EXIT_SOLUTION
        if run_candidate:
            try:
                reply, fds = candidate.send_inputs("trace", x, {"iterations": iterations})
            except (CandidateRaised, CandidateGone, ProtocolError) as error:
                candidate_failed("trace", None, error, "the traced pass")
                return EXIT_SOLUTION
            try:
                if reply.get("trace_missing") is not None or len(fds) != 1:
                    print(f"pkbw_pkb_rank: rank {rank}: no candidate trace: "
                          f"{str(reply.get('trace_missing') or 'its process sent no trace')[:1000]}", file=sys.stderr)
                else:
                    # Read with the limit, whatever size the memfd claims: the candidate's process wrote it.
                    os.lseek(fds[0], 0, os.SEEK_SET)
                    chunks, size = [], 0
                    while size <= channel.TRACE_LIMIT_BYTES:
                        chunk = os.read(fds[0], 1 << 20)
                        if not chunk:
                            break
                        chunks.append(chunk)
                        size += len(chunk)
                    if size > channel.TRACE_LIMIT_BYTES:
                        print(f"pkbw_pkb_rank: rank {rank}: the candidate's trace is over "
                              f"{channel.TRACE_LIMIT_BYTES} bytes: not kept", file=sys.stderr)
                    else:
                        with open(os.path.join(folder, "candidate", f"rank_{rank}.candidate.torch.json"), "wb") as f:
                            f.write(b"".join(chunks))
            finally:
                channel.close_fds(fds)
        return EXIT_OK

    trials_run = 0
    keep = bool(config.get("keep_outputs"))
    try:
        for trial in range(trials):
            events.phase("inputs", trial)
            # One build per trial: the candidate's process gets a copy, the reference these (the
            # candidate never touches them, so they are pristine when the reference runs).
            x = inputs(trial)
            # The candidate first, as pkbw-rank does (its process could not see this trial's result
            # anyway; the order keeps the two engines alike).
            cand_out = call_candidate(trial, trial == 0, x) if run_candidate else None
            dist.barrier()
            ref_out = call_reference(trial, trial == 0, x) if run_reference else None
            dist.barrier()
            trials_run += 1
            if not (run_reference and run_candidate):  # a dryrun: nothing to compare, no stop to agree on
                invalid = isinstance(cand_out, InvalidOutput)
                events.send("rank_result", trial=trial, status="invalid_output" if invalid else "pass",
                            message=f"the candidate's output cannot be taken: {cand_out.message}"[:4000] if invalid
                            else "", tensors=[], guard_violations=[], mutated_inputs=[], outputs={})
                continue
            events.phase("compare", trial)
            if isinstance(cand_out, InvalidOutput):
                problem = f"the candidate's output cannot be taken: {cand_out.message}"
                events.send("rank_result", trial=trial, status="invalid_output", message=problem[:4000],
                            tensors=[], guard_violations=[], mutated_inputs=[], outputs={})
            else:
                problem = pkb_mismatch(ref_out, cand_out, atol, rtol, torch)
                folder = os.path.join(out_dir, "outputs", f"trial_{trial}")
                os.makedirs(folder, exist_ok=True)
                paths = {}
                for side, value in (("reference", ref_out), ("candidate", cand_out)):
                    tensors, values = output_leaves(value, torch)
                    paths[side] = os.path.join(folder, f"rank_{rank}_{side}.safetensors")
                    write_safetensors(paths[side], tensors, values, torch)
                events.send("rank_result", trial=trial, status="mismatch" if problem else "pass",
                            message=problem or "", tensors=[], guard_violations=[], mutated_inputs=[],
                            outputs=paths, keep_outputs=keep or bool(problem), pkb_rule=True)
            # PKB stops at the first mismatching trial; every rank must agree to stop together.
            flag = torch.tensor([1 if problem else 0], device=device)
            dist.all_reduce(flag, op=dist.ReduceOp.MAX)
            if flag.item() and not config.get("all_trials"):
                break
        else:
            if isinstance(config.get("trace"), dict):
                code = traced_pass(config["trace"], inputs(0))
                if code != EXIT_OK:
                    return code
            if config.get("perf"):
                events.phase("perf")
                timing = Perf(state, config["perf"] if isinstance(config["perf"], dict) else {})
                x = inputs(0)
                sides = []
                try:
                    if run_candidate:
                        candidate.send_inputs("perf_setup", x, {})
                    if run_reference:
                        sides.append(("reference", LocalTiming(torch, cuda, dist.barrier, reference, x), x))
                    if run_candidate:
                        sides.append(("candidate", RemoteTiming(candidate, dist.barrier), x))
                    timing.count_blocks(len(sides))
                    if timing.o.get("pkb", True):
                        for name, side, args in sides:
                            timing.pkb(name, side, args)
                    if timing.o.get("pkbw", True):
                        timing.pkbw(sides)
                except (CandidateRaised, CandidateGone, ProtocolError) as error:
                    candidate_failed("perf", None, error, "perf")
                    return EXIT_SOLUTION
    except SolutionFailed:
        return EXIT_SOLUTION
    events.phase("teardown")
    try:
        threads = len(os.listdir(f"/proc/{candidate.pid}/task")) if candidate is not None else 0
    except OSError:
        threads = 0
    exit_sent = candidate is None
    if candidate is not None:
        try:
            candidate.send({"op": "exit"})  # the candidates leave their group while the judges leave theirs
            exit_sent = True
        except CandidateGone as error:
            print(f"pkbw_pkb_rank: rank {rank}: the candidate's process {error} before the teardown",
                  file=sys.stderr)
    try:
        dist.barrier()
        dist.destroy_process_group()
    except Exception as error:  # noqa: BLE001 - PKB only warns here
        events.error("teardown", "nccl_error", f"process group teardown: {error}")
    if candidate is not None and exit_sent:
        try:
            candidate.reply(CANDIDATE_LEAVE_S)
            candidate.process.wait(timeout=CANDIDATE_EXIT_S)
        except (CandidateGone, CandidateRaised, ProtocolError, TimeoutError, subprocess.TimeoutExpired) as error:
            # PKB only warns about teardown; the candidate's verdicts are already out.
            print(f"pkbw_pkb_rank: rank {rank}: the candidate's process did not leave cleanly: {error}",
                  file=sys.stderr)
    if candidate is not None:
        described = candidate.container.describe()
        left = resources.release()

        def listed(processes):  # at most 32: a fork bomb's count is in leftover_count
            return [{"pid": pid, "command": command[:200]} for pid, command in processes[:32]]

        events.send("candidate", stage="finished", threads=threads, containment=described,
                    leftovers=listed(left.killed), leftover_count=left.count, killed_groups=left.groups,
                    escaped=listed(left.escaped))
    events.send("rank_done", trials_run=trials_run)
    return EXIT_OK


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True)
    args = parser.parse_args()
    resources = Resources()
    try:
        code = run(args, resources)
    except Exception:  # noqa: BLE001
        traceback.print_exc()
        code = EXIT_INTERNAL
    finally:
        resources.release()
    sys.stdout.flush()
    sys.stderr.flush()
    # os._exit: a wedged NCCL communicator must not keep the process alive.
    os._exit(code)


if __name__ == "__main__":
    main()
