#!/usr/bin/env python3
"""pkbw's rank program for ParallelKernelBench (PKB) Python solutions: the judge.

The pkbw launcher starts one of these per rank, exactly as it starts pkbw-rank (docs/engine.md, "Rank
program contract"): RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT in the environment, the
JSON-lines events written to the pipe PKBW_CONTROL_FD, the configuration file given by --config. The
configuration's "pkb" object names the PKB checkout, the problem's reference and the candidate.

Per rank, two processes (three with perf). This one, the judge, keeps the control pipe, initialises the
process group as PKB's backend init does, imports PKB's reference, builds every trial's inputs with the
checkout's own create_input_tensor, runs the reference, decides with PKB's rule (torch.allclose on
.float(), rtol relative to the candidate, recursing over tuples, lists and dicts) and writes both
outputs as safetensors; the launcher re-compares those files with pkbw's comparison (core/compare.h) for
the full error statistics. The candidate's module is imported only by a second process,
pkbw_pkb_candidate.py, started here (through the optional wrapper prefix) with no control pipe, no
rendezvous token and a process group of its own: it gets each trial's inputs, returns its outputs, and
runs the candidate's timed calls when the judge asks. So the candidate cannot write events, call the
reference or read the reference's outputs from memory. With perf, a third process, the same program
with PKB's reference loaded (the reference's timing worker, in a group of its own), runs the
reference's timed calls: the judge only measures (docs/pkb-interop.md, "Timing").

Exit codes follow pkbw-rank: 0 finished, 3 environment (no torch, no GPU, process group, the
candidate's process could not start), 4 the solution raised, broke the CUDA context or its process
died, 5 internal error.
"""

import argparse
import contextlib
import ctypes
import fcntl
import json
import math
import mmap
import os
import secrets
import select
import shlex
import signal
import socket
import stat
import struct
import subprocess
import sys
import time
import traceback

import pkbw_containment as containment
import pkbw_sandbox
import pkbw_pkb_candidate as channel
from pkbw_pkb_candidate import ChannelClosed, ProtocolError

# The run contract's words as core/include/pkbw/core/status.h defines them (rank exit codes, rank_result
# statuses, error kinds, phases): this judge speaks to the same launcher as pkbw-rank, and
# tests/engine/test_pkb_contract_words.py fails when a value here or a word used below drifts from core.
EXIT_OK, EXIT_ENVIRONMENT, EXIT_SOLUTION_BROKE, EXIT_INTERNAL = 0, 3, 4, 5
STATUS_PASS, STATUS_MISMATCH, STATUS_INVALID_OUTPUT = "pass", "mismatch", "invalid_output"
STATUS_ERROR, STATUS_CRASH = "error", "crash"
KIND_SOLUTION_ERROR, KIND_CUDA_ERROR, KIND_NCCL_ERROR = "solution_error", "cuda_error", "nccl_error"
KIND_RENDEZVOUS, KIND_ENVIRONMENT, KIND_INTERNAL = "rendezvous", "environment", "internal"
# The run folder's layout (core/include/pkbw/core/run_layout.h, kRankEvents <-> LAYOUT_RANK_EVENTS ...):
# patterns filled with str.format(rank=, trial=, side=).
LAYOUT_RANK_EVENTS = "rank_{rank}.events.jsonl"
LAYOUT_TRIAL_DIR = "outputs/trial_{trial}"
LAYOUT_TRIAL_OUTPUTS = "rank_{rank}_{side}.safetensors"
LAYOUT_TRACE_DIR = "trace"
LAYOUT_CANDIDATE_TRACE_DIR = "candidate"
LAYOUT_TORCH_TRACE = "rank_{rank}.{side}.torch.json"
PHASE_START, PHASE_COMPILE, PHASE_RENDEZVOUS, PHASE_INPUTS = "start", "compile", "rendezvous", "inputs"
PHASE_CANDIDATE, PHASE_REFERENCE, PHASE_COMPARE = "candidate", "reference", "compare"
PHASE_PERF, PHASE_TRACE, PHASE_TEARDOWN = "perf", "trace", "teardown"
CANDIDATE_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pkbw_pkb_candidate.py")
PR_SET_DUMPABLE, PR_SET_CHILD_SUBREAPER = 4, 36
# The teardown: how long the candidate's process may take to leave its group, then to exit (together
# well inside the launcher's 30 s teardown deadline).
CANDIDATE_LEAVE_S, CANDIDATE_EXIT_S = 15.0, 5.0
# Where judge rank 0 leaves the candidates' port, and the reference timing workers', in the judges' store.
CANDIDATE_PORT_KEY = "pkbw/candidate_master_port"
REFERENCE_PORT_KEY = "pkbw/reference_worker_master_port"


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
    """The argv prefix of the user's own that the workers are started through instead of pkbw-sandbox:
    the config's pkb.candidate_wrapper (a list of strings), else $PKBW_PKB_CANDIDATE_WRAPPER (shell
    words), else None (pkbw's sandbox, pkbw_sandbox.py). The wrapper must exec the rest of its argv
    keeping the --channel-fd descriptor."""
    if "candidate_wrapper" in pkb:
        prefix = pkb["candidate_wrapper"]
        if not isinstance(prefix, list) or not all(isinstance(x, str) and x for x in prefix):
            raise ConfigError(f"{config_path}: pkb.candidate_wrapper must be a list of non-empty strings, "
                              f"not {json.dumps(prefix)[:200]}")
        return list(prefix)
    text = os.environ.get("PKBW_PKB_CANDIDATE_WRAPPER", "")
    try:
        return shlex.split(text) or None
    except ValueError as error:
        raise ConfigError(f"$PKBW_PKB_CANDIDATE_WRAPPER ({text[:200]!r}): {error}") from None


def worker_sandbox(pkb, wrapper, extensions_folder, run_folder):
    """How a worker is started: the user's wrapper as given, else pkbw's sandbox for it (its own
    directory and extensions folder; pkbw_sandbox.py)."""
    if wrapper is not None:
        return pkbw_sandbox.WorkerSandbox(
            wrapper, {}, f"wrapper {json.dumps(wrapper)[:200]}: pkbw does not know what it enforces", 0)
    if extensions_folder:
        os.makedirs(extensions_folder, exist_ok=True)
    return pkbw_sandbox.worker_sandbox(pkb, extensions_folder, pkb.get("solution_file"), run_folder)


def candidate_environment(extensions_folder, sandbox=None):
    """pkbw's own variables (the control pipe's number, the rendezvous token and port, the launcher's
    pid) and the judges' MASTER_PORT stay with the judge; the candidates' port comes with "init". The
    sandbox's own directory is its HOME and TMPDIR (Python's user site stays where it was)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PKBW_") and k != "MASTER_PORT"}
    if extensions_folder:
        env["TORCH_EXTENSIONS_DIR"] = extensions_folder
    if sandbox is not None and sandbox.environment:
        import site
        env["PYTHONUSERBASE"] = os.environ.get("PYTHONUSERBASE") or site.getuserbase()
        env.update(sandbox.environment)
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


class InputsCannotCross(Exception):
    """An input of PKB's that pkbw cannot carry to a worker, or that the worker could not rebuild: pkbw's
    limit (or the checkout's), reported as an internal error, never against the candidate."""


class InputGroups:
    """The process groups PKB's create_input_tensor makes (dist.new_group: a collective of every judge)
    while `recording`: each new_group call's ranks, sorted, first seen first (the same list on every
    rank). The workers make the same groups in the same order in their own worlds
    (CandidateProcess.make_groups) before they rebuild inputs that hold one."""

    def __init__(self):
        self.made, self.recording = [], False

    def install(self, dist, world):
        original = dist.new_group

        def new_group(*args, **kwargs):
            group = original(*args, **kwargs)
            if self.recording:
                ranks = kwargs.get("ranks", args[0] if args else None)
                key = list(range(world)) if ranks is None else sorted(int(r) for r in ranks)
                if key not in self.made:
                    self.made.append(key)
            return group

        new_group.pkbw_original = original
        dist.new_group = new_group

    @contextlib.contextmanager
    def record(self):
        self.recording = True
        try:
            yield
        finally:
            self.recording = False

    def fields(self):
        """The message fields that carry them (none while there are none)."""
        return {"process_groups": [list(ranks) for ranks in self.made]} if self.made else {}


INPUT_GROUPS = InputGroups()


class Candidate:
    """A worker process of this program's (pkbw_pkb_candidate.py) seen from the judge: the candidate's,
    or the reference's timing worker (subtree: its container's tree, without cgroups, is its own
    subtree only)."""

    def __init__(self, wrapper, argv, env, label="cand", subtree=False):
        parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self.wrapper = wrapper
        self.sandbox = None  # pkbw_sandbox.WorkerSandbox, set by the judge
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
        self.untrusted = label.startswith("cand")
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
            if message.get("kind") == "input_error":
                who = "the candidate's process" if self.untrusted else "the reference's timing worker"
                raise InputsCannotCross(f"{who} could not rebuild them: {str(message.get('message'))[:2000]}")
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

        try:
            tree = channel.encode_value(list(args), torch, tensor, "input",
                                        inputs=channel.InputEncoder(torch, tensor))
        except TypeError as error:
            raise InputsCannotCross(str(error)) from None
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
        message.update(INPUT_GROUPS.fields())
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


def read_candidate_trace(fd):
    """The bytes of the chrome trace the candidate's process sent, or (None, why). Its process made
    the descriptor: anything but a regular file (a memfd is one) could block the read, and its size
    is checked before a byte is read and the read stopped at the limit whatever the size said."""
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        return None, "its descriptor is not a memfd"
    if info.st_size > channel.TRACE_LIMIT_BYTES:
        return None, f"{info.st_size} bytes, over {channel.TRACE_LIMIT_BYTES}"
    os.lseek(fd, 0, os.SEEK_SET)
    chunks, size = [], 0
    while size <= channel.TRACE_LIMIT_BYTES:
        chunk = os.read(fd, min(1 << 20, channel.TRACE_LIMIT_BYTES + 1 - size))
        if not chunk:
            return b"".join(chunks), None
        chunks.append(chunk)
        size += len(chunk)
    return None, f"over {channel.TRACE_LIMIT_BYTES} bytes"


def write_beside_candidate(folder, name, data):
    """Writes folder/name where the candidate's process may write too (trace/candidate): a link it left
    under that name is removed, not written through, and a folder that is a link is not entered."""
    dir_fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        try:
            os.unlink(name, dir_fd=dir_fd)
        except FileNotFoundError:
            pass
        fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644,
                     dir_fd=dir_fd)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
    finally:
        os.close(dir_fd)


def finite(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value < float("inf")


# ---------------------------------------------------------------------------------------------------
# Timing (docs/pkb-interop.md, "Timing"): the judge measures, the workers only compute. Both sides'
# calls run in worker processes, the candidate's own and the reference's timing worker (the same
# program with PKB's reference loaded, trusted, in a process group of its own); the judge's clock runs
# from its request to the reply of every rank's worker, less a round trip it calibrated on the trusted
# worker. Every timed call reads a fresh input set, drawn from a secret trial base and copied into the
# shared input slots only right before its block, and writes an output slot of its own, poisoned
# before the block; after each ABBA pair every candidate slot is checked against the reference's slot
# for the same inputs. The candidate's process tree is frozen whenever its own calls are not running.
# The same events as engine/runtime/checked_timing.cpp, which the launcher reads for both engines.

FREEZE_TIMEOUT_MS = 5000          # a tree that takes longer to stop is reported, not waited for
ROUND_TRIP_SAMPLES = 25           # empty blocks on the trusted worker
PROBE_SPIN_US = 20.0              # the GPU probe kernel's own length
HOST_MEMORY_BUDGET = 512 << 20    # staging and slots per rank on the host
MAX_CALLS_PER_BLOCK = 128         # core/timing_checks.h kMaxCallsPerBlock
TIMING_TRIAL_BASE = 1 << 24       # timed trials start past this, far from any eval trial
SECRET_TRIAL_SPAN = 1 << 39       # PKB seeds 42 + id*1000 + rank + trial*1_000_003: within int64
POISON_BYTE = 0xFF                # NaN in every float dtype, -1 in every signed integer
PERTURB_LIMIT = 16                # perturbations are integers in [0, 16): exact in bf16, and in sums


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
        channel.close_fds(fds)
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
            self.tensor = torch.as_tensor(channel.DeviceBytes(self.pointer, size), device=device)[:nbytes]

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
        stride = channel.dense_layout(t)
        if stride != list(t.stride()):
            t = t.contiguous()
        nbytes = channel.span_elements(list(t.shape), stride) * t.element_size()
        leaves.append((t, {"dtype": str(t.dtype).split(".")[-1], "shape": list(t.shape), "stride": stride,
                           "offset": offset}))
        offset += aligned(nbytes)
        return len(leaves) - 1

    tree = channel.encode_value(list(args), torch, tensor, "input", inputs=channel.InputEncoder(torch, tensor))
    return tree, leaves, offset


def lay_out_outputs(output, torch):
    """([leaf], slot bytes) of the reference's output of trial 0: each tensor leaf's slot (contiguous,
    256-byte aligned), each other leaf a value the workers send back."""
    leaves, offset = [], 0
    for path, leaf in channel.output_items(output, torch):
        if isinstance(leaf, torch.Tensor):
            shape = list(leaf.shape)
            leaves.append({"path": path, "dtype": str(leaf.dtype).split(".")[-1], "shape": shape,
                           "stride": channel.contiguous_strides(shape), "offset": offset})
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


class CheckedTiming:
    """pkbw's timed blocks for the sides present (engine/runtime/checked_timing.cpp): a `timing_plan`
    event, a `perf_result` per block and a `timed_check` per candidate block."""

    def __init__(self, perf, sides, draw, first_output):
        self.p, self.s, self.o = perf, perf.s, perf.o
        self.torch, self.device = self.s.torch, self.s.device
        self.reference = next((side for side in sides if not side.untrusted), None)
        self.candidate = next((side for side in sides if side.untrusted), None)
        self.draw, self.first_output = draw, first_output
        self.pairs = max(int(self.o.get("pairs", 10)), 1)
        self.inputs_note = self.inputs_info = ""
        self.flush_buffer, self.flush_value = None, 0
        self.unchecked_reason = ""  # set: the calls read inputs their workers drew, and are not checked
        self.round_trip_ms = self.idle_probe_us = 0.0
        self.probe = None

    # --- collectives among the judges only (never the workers' groups)

    def agree(self, values):
        """Judge rank 0's integers, on every judge."""
        torch = self.torch
        tensor = torch.tensor(values, dtype=torch.int64, device=self.device)
        self.s.dist.broadcast(tensor, 0)
        return [int(x) for x in tensor.tolist()]

    def reduce(self, value, op):
        torch = self.torch
        tensor = torch.tensor([int(value)], dtype=torch.int64, device=self.device)
        self.s.dist.all_reduce(tensor, op=op)
        return int(tensor.item())

    def any_rank(self, mine):
        return self.reduce(1 if mine else 0, self.s.dist.ReduceOp.MAX) > 0

    # --- the plan

    def plan(self):
        torch, s = self.torch, self.s
        base, noise = self.agree([TIMING_TRIAL_BASE + secrets.randbelow(SECRET_TRIAL_SPAN), secrets.randbits(62)]
                                 if s.rank == 0 else [0, 0])
        self.trial_base, self.noise_seed = base, noise
        first, second = self.draw(base), self.draw(base + 1)
        reason = ""
        try:
            tree, leaves, set_bytes = lay_out_inputs(first, torch, self.device)
            if not self.same_layout(tree, leaves, second):
                reason = "its inputs' structure, shapes or values other than tensors differ between trials"
        except TypeError as error:
            reason = f"an input cannot be laid into a slot ({error})"
        if self.any_rank(bool(reason)):
            self.unchecked_reason = reason or "another rank's inputs cannot be laid into slots"
            self.input_bytes = 0
        else:
            self.tree, self.specs, self.input_bytes = tree, [spec for _, spec in leaves], set_bytes
        self.leaves, self.slot_bytes = lay_out_outputs(self.first_output, torch) \
            if self.first_output is not None and not self.unchecked_reason else ([], 0)
        # Every rank makes the same number of calls: the calls may be collectives.
        self.cold = self.o.get("rotation", "copies") == "copies"
        budget = HOST_MEMORY_BUDGET if not s.cuda else \
            int(float(self.o.get("rotation_memory_fraction", 0.25)) * s.total_memory)
        calls, self.reason = plan_calls(self.input_bytes, self.slot_bytes, budget, int(self.o.get("iterations", 50)),
                                        self.pairs)
        self.calls = self.reduce(calls, s.dist.ReduceOp.MIN)
        if self.calls != calls:
            self.reason += f"; {self.calls} on every rank (the fewest any rank could hold)"
        if not self.unchecked_reason:
            self.unchecked_reason = self.stage(first, second)
            if self.unchecked_reason:
                self.leaves, self.slot_bytes, self.input_bytes = [], 0, 0

    def same_layout(self, tree, leaves, args):
        try:
            other_tree, other, _ = lay_out_inputs(args, self.torch, self.device)
        except TypeError:
            return False
        return other_tree == tree and [spec for _, spec in other] == [spec for _, spec in leaves]

    def stage(self, first, second):
        """Draws every timed set ((pairs + 1) x calls: a group per pair, one for the warm-up) into the
        judge's own memory, perturbed when PKB's draws repeat. Returns why the sets cannot share one
        slot layout (agreed among the judges), or ""."""
        torch = self.torch
        count = (self.pairs + 1) * self.calls
        self.staging = torch.zeros(count * self.input_bytes, dtype=torch.uint8, device=self.device)
        self.put(0, first)
        self.put(1, second)
        # PKB's inputs of problems 1-8 are constants: fresh draws of a constant are no defence.
        self.perturbed = self.any_rank(self.repeats())
        floating = any(channel.dtype_named(spec["dtype"], torch).is_floating_point for spec in self.specs)
        if self.any_rank(self.perturbed and floating):
            self.inputs_info = (f"PKB's inputs for this problem are the same every trial: every floating "
                                f"input of every timed set has random integers in [0, {PERTURB_LIMIT}) "
                                "added, the same on every rank (exact in bf16 and in sums)")
        self.perturb(0)
        self.perturb(1)
        if self.any_rank(self.repeats()):
            self.inputs_note = ("this problem's inputs are the same every call: a candidate that caches its "
                                "result by content cannot be told from one that computes")
        unlike = None
        for index in range(2, count):
            args = self.draw(self.trial_base + index)
            if not self.same_layout(self.tree, [(None, spec) for spec in self.specs], args):
                unlike = index
                break
            self.put(index, args)
            self.perturb(index)
        if self.any_rank(unlike is not None):
            self.staging = None
            return (f"timed input set {unlike} is laid out unlike set 0" if unlike is not None else
                    "another rank's timed input sets are laid out unlike their first") + \
                " (the problem's shapes change between trials)"
        if self.s.cuda:
            torch.cuda.synchronize()
        return ""

    def set_bytes_of(self, index):
        return self.staging[index * self.input_bytes:(index + 1) * self.input_bytes]

    def put(self, index, args):
        _, leaves, _ = lay_out_inputs(args, self.torch, self.device)
        raw = self.set_bytes_of(index)
        for tensor, spec in leaves:
            if tensor.numel():
                channel.slot_view(raw, 0, spec, self.torch).copy_(tensor)

    def repeats(self):
        """Whether sets 0 and 1 are byte for byte the same (their trees already are)."""
        return bool(self.torch.equal(self.set_bytes_of(0), self.set_bytes_of(1)))

    def perturb(self, index):
        if not self.perturbed:
            return
        torch = self.torch
        raw = self.set_bytes_of(index)
        for number, spec in enumerate(self.specs):
            view = channel.slot_view(raw, 0, spec, torch)
            if not view.is_floating_point() or view.numel() == 0 or view.element_size() == 1:
                continue  # (float8 has no addition)
            # Seeded by the secret, the set and the tensor, not the rank: equal inputs stay equal across ranks.
            generator = torch.Generator().manual_seed((self.noise_seed + index * 1_000_003 + number * 7919) % 2**63)
            noise = torch.randint(0, PERTURB_LIMIT, tuple(view.shape), generator=generator)
            view.add_(noise.to(device=view.device, dtype=view.dtype))

    # --- slots and workers

    def prepare(self):
        torch, s = self.torch, self.s
        ipc = s.ipc if s.cuda else None
        self.input_slots = Region(torch, self.device, ipc, self.calls * self.input_bytes) \
            if not self.unchecked_reason else None
        for side in (self.reference, self.candidate):
            if side is None:
                continue
            if self.unchecked_reason:
                side.request({"op": "own_inputs", "problem_id": s.problem_id, "shape": list(s.shape),
                              "dtype": str(s.dtype).split(".")[-1],
                              "trials": [self.trial_base + k for k in range(self.calls)]})
                continue
            fds = []
            message = {"op": "map_slots", "calls": self.calls, "set_bytes": self.input_bytes, "args": self.tree,
                       "tensors": self.specs, "inputs": self.input_slots.spec(fds), **INPUT_GROUPS.fields()}
            if self.slot_bytes or self.leaves:
                side.outputs = Region(torch, self.device, ipc, self.calls * self.slot_bytes)
                message.update(outputs=side.outputs.spec(fds), slot_bytes=self.slot_bytes, leaves=self.leaves)
            side.request(message, fds)

    def release(self):
        """Unmaps the slots in the workers (running: requests need the candidate thawed) and frees them."""
        for side in (self.reference, self.candidate):
            if side is not None:
                side.request({"op": "unmap_slots"})
        if self.s.cuda:
            self.torch.cuda.synchronize()  # nothing of the judge's still reads them
        for region in [self.input_slots] + [side.outputs for side in (self.reference, self.candidate)
                                            if side is not None]:
            if region is not None:
                region.close()

    def load(self, group, side):
        """The group's inputs back into the input slots (a side may change them in place) and the side's
        output slots poisoned, so that an element no call wrote cannot pass."""
        if self.input_slots is not None and self.input_bytes:
            size = self.calls * self.input_bytes
            self.input_slots.tensor.copy_(self.staging[group * size:(group + 1) * size])
        if side.outputs is not None and side.outputs.nbytes:
            side.outputs.tensor.fill_(POISON_BYTE)
        if self.s.cuda:
            if self.cold:  # 3x L2 written elsewhere: no call finds its inputs (the last copied) in the cache
                if self.flush_buffer is None:
                    self.flush_buffer = self.torch.empty(3 * self.s.l2_bytes, dtype=self.torch.uint8,
                                                         device=self.s.device)
                self.flush_value = (self.flush_value + 1) % 256
                self.flush_buffer.fill_(self.flush_value)
            self.torch.cuda.synchronize()

    # --- the blocks

    def calibrate_round_trip(self):
        """The judge's clock around an empty block on the trusted worker, by the same path as a block's
        (judges' barrier, ping, judges' barrier, request, reply, judges' barrier): the median is
        subtracted from every block."""
        if self.reference is None:
            return 0.0
        samples = []
        for _ in range(ROUND_TRIP_SAMPLES):
            self.s.barrier()
            self.reference.request({"op": "ping"})
            self.s.barrier()
            start = time.perf_counter()
            self.reference.timed_calls(0)
            self.s.barrier()
            samples.append((time.perf_counter() - start) * 1e3)
        samples.sort()
        return samples[len(samples) // 2]

    def warm_up(self, side, still):
        warmup = int(self.o.get("warmup", 50))
        if warmup <= 0:
            return
        self.load(self.pairs, side)  # the warm-up's own inputs: never timed, never shown again
        for _ in range(-(-warmup // self.calls)):
            self.s.barrier()
            with still.thawed(side):
                side.timed_calls(self.calls)
                self.s.barrier()  # every rank's worker is done (rank 0's serves the others' barriers)

    def time_block(self, block, side, still):
        s = self.s
        self.load(block // 2, side)
        watching = not side.untrusted and self.candidate is not None
        cpu_before = still.cpu_ms() if watching else 0.0
        probe_before = self.probe.us() if self.probe else 0.0
        s.barrier()  # the judges start the block together; the workers' barrier is inside
        with still.thawed(side):
            side.request({"op": "ping"})  # woken (and thawed) before the clock starts, as in the calibration
            s.barrier()  # every rank's worker is awake (a candidate thawed) before any judge starts its clock
            start = time.perf_counter()
            reply = side.timed_calls(self.calls)
            # The block ends when every rank's worker has answered: work a rank left after its answer
            # is inside the time, and rank 0's worker, which serves its group's barriers, is done before
            # the freeze.
            s.barrier()
            judge_ms = (time.perf_counter() - start) * 1e3
        # The candidate is frozen again here: a kernel of its still running now holds the GPU.
        probe_after = self.probe.us() if self.probe else 0.0
        per_call = max(judge_ms - self.round_trip_ms, 0.0) / self.calls  # core: judge_call_ms
        event = {"protocol": "pkbw", "side": side.name, "block": block, "samples_ms": [per_call],
                 "call_samples_ms": reply["samples_ms"], "span_ms": reply["span_ms"], "calls": reply["calls"],
                 "judge_ms": judge_ms, "round_trip_ms": self.round_trip_ms}
        if self.probe:
            event.update(probe_before_us=probe_before, probe_after_us=probe_after, idle_probe_us=self.idle_probe_us)
        if watching:
            event.update(frozen_cpu_ms=max(still.cpu_ms() - cpu_before, 0.0), frozen=still.failures == 0)
        s.events.send("perf_result", **event)
        self.p.progress("pkbw", side.name)
        return reply

    # --- the check of a pair

    def by_call(self, region, leaf):
        """(calls, *shape) over one output leaf of every slot of a side."""
        torch = self.torch
        dtype = channel.dtype_named(leaf["dtype"], torch)
        size = channel.item_size(dtype, torch)
        typed = region.tensor.view(dtype)
        return typed.as_strided([self.calls] + leaf["shape"], [self.slot_bytes // size] + leaf["stride"],
                                typed.storage_offset() + leaf["offset"] // size)

    def tensor_failures(self):
        """{call: leaf} of the first tensor leaf that fails PKB's rule per call (torch.allclose on .float(),
        NaN never close), all calls at once, in chunks of bounded memory."""
        torch, atol, rtol = self.torch, self.s.atol, self.s.rtol
        failures = {}
        for leaf in self.leaves:
            if leaf.get("value") or not self.slot_bytes:
                continue
            numel = max(math.prod(leaf["shape"]), 1)
            chunk = max(min(self.calls, (64 << 20) // numel), 1)
            ref, cand = self.by_call(self.reference.outputs, leaf), self.by_call(self.candidate.outputs, leaf)
            for first in range(0, self.calls, chunk):
                a, b = ref[first:first + chunk].float(), cand[first:first + chunk].float()
                close = torch.isclose(a, b, rtol=rtol, atol=atol).reshape(a.shape[0], -1).all(dim=1).tolist()
                for offset, ok in enumerate(close):
                    if not ok:
                        failures.setdefault(first + offset, leaf)
        return failures

    def value_failure(self, ref_row, cand_row):
        """Why a call's value leaves differ from the reference's (PKB compares non-tensors with ==)."""
        def no_tensor(_):
            raise ProtocolError("a tensor among the output values")

        if not isinstance(cand_row, list) or not isinstance(ref_row, list) or len(cand_row) != len(ref_row):
            return "its output values cannot be read"
        values = [leaf for leaf in self.leaves if leaf.get("value")]
        for leaf, ref_node, cand_node in zip(values, ref_row, cand_row):
            try:
                ref_value = channel.decode_value(ref_node, self.torch, no_tensor)
                cand_value = channel.decode_value(cand_node, self.torch, no_tensor)
            except ProtocolError as error:
                return f"{leaf['path']}: its value cannot be read ({error})"
            found = pkb_mismatch(ref_value, cand_value, self.s.atol, self.s.rtol, self.torch, leaf["path"])
            if found:
                return found
        return None

    def check_pair(self, candidate_block, ref_reply, cand_reply):
        s = self.s
        status, failed, message = "pass", 0, ""
        if self.unchecked_reason:
            return  # nothing to check against: the plan said so (checked false, and why)
        if not any(not leaf.get("value") for leaf in self.leaves):
            status, message = "unchecked", "the problem has no tensor output to check"
        elif ref_reply["failed"] or ref_reply["failed_count"]:
            k, why = next(iter(sorted(ref_reply["failed"].items())), (0, "?"))
            status, message = "unchecked", (f"the reference's outputs do not keep trial 0's structure (call {k}: "
                                            f"{why}): the timed calls are not checked")
        else:
            reasons = dict(self.tensor_failures())
            for k, why in cand_reply["failed"].items():
                reasons.setdefault(k, why)
            if ref_reply["values"] is not None:
                for k in range(self.calls):
                    if k not in reasons:
                        why = self.value_failure(ref_reply["values"][k], (cand_reply["values"] or [None] * self.calls)[k])
                        if why:
                            reasons[k] = why
            failed = len(reasons)
            if failed:
                status = "mismatch"
                k = min(reasons)
                why = reasons[k]
                if isinstance(why, dict):  # a tensor leaf: PKB's own words for it
                    why = pkb_mismatch(self.by_call(self.reference.outputs, why)[k],
                                       self.by_call(self.candidate.outputs, why)[k], s.atol, s.rtol, self.torch,
                                       why["path"]) or f"{why['path']}: not allclose"
                message = f"call {k} of {self.calls}: {why}"
        s.events.send("timed_check", block=candidate_block, side="candidate", calls=self.calls, failed_calls=failed,
                      status=status, message=message[:4000])

    # --- the whole timing

    def send_plan(self):
        event = {"calls_per_block": self.calls, "pairs": self.pairs, "cold_inputs": self.cold, "reason": self.reason,
                 "input_mode": "pkb", "inputs_note": self.inputs_note, "inputs_info": self.inputs_info,
                 "round_trip_ms": self.round_trip_ms, "round_trip_trusted": self.reference is not None,
                 "checked": self.reference is not None and self.candidate is not None and not self.unchecked_reason}
        if self.unchecked_reason:
            event["inputs_note"] = (f"the timed calls read inputs their workers drew and are not checked: "
                                    f"{self.unchecked_reason}")
        if self.probe:
            event.update(idle_probe_us=self.idle_probe_us, probe_spin_us=PROBE_SPIN_US)
        if self.candidate is not None:
            event["containment"] = self.candidate.worker.container.describe()
        self.s.events.send("timing_plan", **event)

    def run(self):
        self.plan()
        self.prepare()
        sides = [side for side in (self.reference, self.candidate) if side is not None]
        # Frozen from here to the end of the blocks, but in its own; the slots' release (requests) after.
        with Stillness(self.candidate) as still:
            self.round_trip_ms = self.calibrate_round_trip()
            if self.s.cuda:
                self.probe = GpuProbe(self.torch)
                self.idle_probe_us = min(self.probe.us() for _ in range(5))
            self.send_plan()
            for side in sides:
                self.warm_up(side, still)
            order = []
            for p in range(self.pairs):  # core/perf_stats.cpp block_order: ABBA
                order += [self.reference, self.candidate] if p % 2 == 0 else [self.candidate, self.reference]
            replies = {}
            for block, side in enumerate(order):
                if len(sides) == 1:
                    if block % 2 == 1:
                        continue  # one side: one block per pair
                    side = sides[0]
                replies[side.name] = (block, self.time_block(block, side, still))
                if len(sides) == 2 and block % 2 == 1:
                    self.check_pair(replies["candidate"][0], replies["reference"][1], replies["candidate"][1])
        self.release()


class Perf:
    """The perf phase: PKB's protocol in each side's worker (the PKB-compatible figure, timed inside the
    worker as PKB does), then pkbw's checked blocks (CheckedTiming)."""

    def __init__(self, rank_state, options):
        self.s = rank_state
        self.o = options
        self.timed, self.blocks = 0, 0

    def count_blocks(self, sides):
        """The perf phase's block count (PKB's series of each side, then pkbw's blocks), known before the
        first, as engine/runtime/perf_runner.cpp counts them for perf_progress."""
        pairs = max(int(self.o.get("pairs", 5)), 1)
        self.blocks = (sides if self.o.get("pkb", True) else 0) + \
            ((pairs if sides == 1 else 2 * pairs) if self.o.get("pkbw", True) and sides else 0)

    def progress(self, protocol, side):
        self.timed += 1
        self.s.events.send("perf_progress", block=self.timed, blocks=self.blocks, protocol=protocol, side=side)

    def pkb(self, sides, args):
        """PKB's protocol (utils/performance.py) on the eval's inputs of trial 0, each side in its worker;
        the candidate frozen while the reference's series runs."""
        s, o = self.s, self.o
        _, groups, size = channel.pkb_plan(args, s.l2_bytes, s.torch)
        candidate = next((side for side in sides if side.untrusted), None)
        for side in sides:
            s.barrier()
            with Stillness(None if side.untrusted else candidate):
                side.send_inputs("pkb_warmup", args, {"groups": groups, "warmup": int(o.get("pkb_warmup", 500))})
                reply = side.request({"op": "pkb_timed", "iterations": int(o.get("pkb_iterations", 100))})
            samples = reply.get("samples_ms")
            if not isinstance(samples, list) or not all(finite(x) for x in samples) or not finite(reply.get("span_ms")):
                side.fail(ProtocolError("a PKB series' reply without finite samples"))
            s.events.send("perf_result", protocol="pkb", side=side.name, block=0, samples_ms=[float(x) for x in samples],
                          span_ms=float(reply["span_ms"]), calls=len(samples), num_input_groups=groups,
                          l2_cache_size_bytes=s.l2_bytes, timed_tensor_bytes=size)
            self.progress("pkb", side.name)

    def pkbw(self, sides, draw, first_output):
        CheckedTiming(self, sides, draw, first_output).run()


# ---------------------------------------------------------------------------------------------------

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

    def __init__(self):
        self.sandboxes = []  # the workers' sandboxes: their directories go once their processes are gone

    def sandbox(self, sandbox):
        self.sandboxes.append(sandbox)
        return sandbox

    def release(self):
        """Kills the reference's timing worker with its container's tree (trusted: nothing it leaves is
        reported), then the candidate's process, its container's tree, then (a second sweep) anything
        below the judge; removes the containers and the sandboxes' directories. Leftovers, the
        candidate's own process not counted."""
        try:
            return self.release_processes()
        finally:
            for sandbox in self.sandboxes:
                sandbox.close()

    def release_processes(self):
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


class RankJudge:
    """One rank's judge, a method per step in the order run() takes them, as pkbw-rank's are split
    (engine/runtime/rank_runner.cpp, rank_trial.cpp): setup, the workers' start, torch and the device,
    the rendezvous, the workers' groups, the loads, the trials (inputs, candidate, reference, compare,
    report), the traced pass, perf, the teardown. The state the steps share is this object's, set by the
    step that makes it; Perf and CheckedTiming read it as their rank state (events, rank, cuda, torch,
    device, l2_bytes, total_memory, barrier, dist, ipc, atol, rtol, problem_id, shape, dtype).

    A step that can end the rank returns its exit code (EXIT_*), and nothing when the run goes on; the
    events it sent are the launcher's account of why."""

    def __init__(self, args, resources):
        """Setup: the configuration file, the launcher's environment, the control pipe, and which sides
        run here. Nothing is started yet; the judge is made unreachable before anything else is."""
        with open(args.config) as f:
            config = json.load(f)
        self.args, self.resources, self.config = args, resources, config
        self.pkb = pkb = config["pkb"]
        self.rank = rank = int(os.environ["RANK"])
        self.world = int(os.environ["WORLD_SIZE"])
        self.local_rank = int(os.environ.get("LOCAL_RANK", rank))
        self.out_dir = config["output_dir"]
        self.events = Events(rank, os.path.join(self.out_dir, LAYOUT_RANK_EVENTS.format(rank=rank)))
        keep_out_of_reach()
        self.cuda = pkb.get("device", "cuda") == "cuda"
        self.run_reference = config.get("mode") != "dryrun" or config.get("dryrun_side") == "reference"
        self.run_candidate = bool(pkb.get("solution_file")) and (
            config.get("mode") != "dryrun" or config.get("dryrun_side") != "reference")
        # The reference's timed calls run in a worker of their own, as the candidate's do.
        self.timing_reference = bool(config.get("perf")) and self.run_reference
        self.candidate = self.timing_worker = None  # the workers (Candidate), where they run
        self.workers = []  # [(worker, its port's key in the judges' store, who it is in messages)]
        self.init_sent = {}  # port key -> the error that kept "init" from reaching that worker
        self.ipc = None  # channel.CudaIpc, shared by the workers on a GPU
        self.trials_run = 0
        self.first_output = None  # trial 0's output (the reference's where it runs): the timed calls' slots

    def run(self):
        """The steps in order; the first that ends the rank gives its exit code."""
        self.prepare_folders()
        for step in (self.start_workers, self.import_torch, self.choose_device):
            code = step()
            if code is not None:
                return code
        self.say_hello()
        for step in (self.rendezvous, self.join_workers, self.load):
            code = step()
            if code is not None:
                return code
        self.read_problem()
        code = self.evaluate()
        if code is not None:
            return code
        return self.teardown()

    # --- setup

    def prepare_folders(self):
        """PKB's worker: Hopper-only JIT unless set, and a torch extensions folder per rank so that ranks
        never race on one .so (kept across runs under pkbw's cache so warm runs do not recompile). The
        candidate's JIT builds run in its process; the judge's folder is apart, should a reference JIT."""
        pkb, rank = self.pkb, self.rank
        os.environ.setdefault("TORCH_CUDA_ARCH_LIST", "9.0")
        self.candidate_folder = self.reference_folder = None
        if pkb.get("extensions_dir"):
            self.candidate_folder = os.path.join(pkb["extensions_dir"], f"pkb_rank_{rank}")
            self.reference_folder = os.path.join(pkb["extensions_dir"], f"pkb_reference_{rank}")
            os.environ["TORCH_EXTENSIONS_DIR"] = os.path.join(pkb["extensions_dir"], f"pkb_judge_{rank}")
            for folder in (self.candidate_folder, self.reference_folder, os.environ["TORCH_EXTENSIONS_DIR"]):
                remove_stale_locks(folder)
        sys.path.insert(0, pkb["checkout"])

    def start_workers(self):
        """The workers first, before torch or a process group starts threads here (their death signal is
        armed between fork and exec); their torch imports overlap the judge's. The reference's timing
        worker is started as the candidate's process is (the same wrapper, environment rules and
        containment), so that both sides are timed under the same conditions; its container is never
        frozen."""
        if not (self.run_candidate or self.timing_reference):
            return
        events, pkb, rank, resources = self.events, self.pkb, self.rank, self.resources
        try:
            wrapper = candidate_wrapper(pkb, self.args.config)
        except ConfigError as error:
            events.error(PHASE_START, KIND_ENVIRONMENT, str(error))
            return EXIT_ENVIRONMENT
        # --cuda-device: its CUDA context is made while the judge starts too.
        argv = [sys.executable, CANDIDATE_SCRIPT] + (["--cuda-device", str(self.local_rank)] if self.cuda else [])
        whose, prefix = "the candidate's process", wrapper or []
        try:
            if self.run_candidate:
                sandbox = resources.sandbox(worker_sandbox(pkb, wrapper, self.candidate_folder, self.out_dir))
                prefix = sandbox.prefix
                self.candidate = resources.candidate = Candidate(
                    prefix, argv, candidate_environment(self.candidate_folder, sandbox), f"cand-r{rank}")
                self.candidate.sandbox = sandbox
            if self.timing_reference:
                whose = "the reference's timing worker"
                sandbox = resources.sandbox(worker_sandbox(pkb, wrapper, self.reference_folder, self.out_dir))
                prefix = sandbox.prefix
                self.timing_worker = resources.reference = Candidate(
                    prefix, argv, candidate_environment(self.reference_folder, sandbox), f"ref-r{rank}",
                    subtree=True)
                self.timing_worker.sandbox = sandbox
                if self.candidate is not None:
                    self.candidate.container.exclude(self.timing_worker.pid)
        except pkbw_sandbox.SandboxError as error:
            events.error(PHASE_START, KIND_ENVIRONMENT, f"{whose}'s sandbox: {error}")
            return EXIT_ENVIRONMENT
        except OSError as error:
            events.error(PHASE_START, KIND_ENVIRONMENT,
                         f"cannot start {whose} {json.dumps(prefix + argv)}: {error}"
                         + (" (the wrapper prefix comes from pkb.candidate_wrapper or $PKBW_PKB_CANDIDATE_WRAPPER)"
                            if wrapper else ""))
            return EXIT_ENVIRONMENT

    def import_torch(self):
        """torch is imported only now, after the workers started (see start_workers); a judge without it
        is the environment's failure."""
        events = self.events
        try:
            import torch
            import torch.distributed as dist
            from torch.distributed.rendezvous import rendezvous
        except Exception as error:  # noqa: BLE001 - any import failure is the environment's
            events.error(PHASE_START, KIND_ENVIRONMENT, f"{sys.executable} cannot import torch: {error}")
            return EXIT_ENVIRONMENT
        self.torch, self.dist, self.torch_rendezvous = torch, dist, rendezvous

    def choose_device(self):
        """This rank's device, and what perf needs of it (the L2 size PKB flushes, the memory budget)."""
        events, torch, rank, local_rank = self.events, self.torch, self.rank, self.local_rank
        if self.cuda:
            if not torch.cuda.is_available() or torch.cuda.device_count() <= local_rank:
                events.error(PHASE_START, KIND_ENVIRONMENT,
                             f"rank {rank} needs CUDA device {local_rank}; torch sees "
                             f"{torch.cuda.device_count() if torch.cuda.is_available() else 0}")
                return EXIT_ENVIRONMENT
            torch.cuda.set_device(local_rank)
            self.device = torch.device("cuda", local_rank)
            properties = torch.cuda.get_device_properties(self.device)
            self.l2_bytes = int(getattr(properties, "L2_cache_size", 0) or 50 * 2**20)
            self.total_memory = int(properties.total_memory)
            self.device_name = properties.name
        else:
            self.device = torch.device("cpu")
            self.l2_bytes = 32 * 2**20
            self.total_memory = 0
            self.device_name = "host"

    def say_hello(self):
        """The rank's hello (what it runs on, with which versions, the workers' pids), then the
        candidate's process as started."""
        events, torch, candidate, timing_worker = self.events, self.torch, self.candidate, self.timing_worker
        nccl = versions(torch, self.cuda)
        events.send("hello", world_size=self.world, pid=os.getpid(), host=socket.gethostname(),
                    backend="cuda" if self.cuda else "host", device=self.device_name, nccl_runtime=nccl,
                    nccl_compiled=nccl, runtime=str(torch.version.cuda or ""), torch=torch.__version__,
                    python=sys.version.split()[0], python_executable=sys.executable, program="pkbw_pkb_rank.py",
                    candidate_pid=candidate.pid if candidate else None,
                    timing_worker_pid=timing_worker.pid if timing_worker else None)
        if candidate is not None:
            # What the run's sandbox line reads (docs/engine.md, "The sandbox"): pkbw-sandbox's own account of
            # what it enforces; a wrapper of the user's may enforce anything, which pkbw cannot tell.
            events.send("candidate", stage="started", pid=candidate.pid, sandbox=candidate.sandbox.description,
                        landlock_abi=candidate.sandbox.landlock_abi, containment=candidate.container.describe())

    # --- the rendezvous

    def rendezvous(self):
        """The judges' process group, and the workers' ports. Each kind of worker has a group of its own
        (its own store, on a port judge rank 0 picks)."""
        events, dist, rank, world = self.events, self.dist, self.rank, self.world
        events.phase(PHASE_RENDEZVOUS)
        self.workers = [(worker, key, who) for worker, key, who in (
            (self.candidate, CANDIDATE_PORT_KEY, "the candidate's process"),
            (self.timing_worker, REFERENCE_PORT_KEY, "the reference's timing worker")) if worker is not None]
        try:
            os.environ["LOCAL_RANK"] = str(self.local_rank)
            # torch's env:// rendezvous, as init_process_group runs it, taken apart so that the workers'
            # ports cross the judges' store before the judges' group starts: the groups (NCCL
            # initialisations on a GPU) then come up at the same time.
            store, _, _ = next(self.torch_rendezvous("env://", rank, world))
            for worker, key, _ in self.workers:
                self.start_worker_group(store, worker, key)
            kwargs = {"backend": "nccl" if self.cuda else "gloo", "store": dist.PrefixStore("default_pg", store),
                      "rank": rank, "world_size": world}
            if self.cuda:
                try:
                    dist.init_process_group(**kwargs, device_id=self.device)
                except TypeError:
                    dist.init_process_group(**kwargs)
            else:
                dist.init_process_group(**kwargs)
        except Exception as error:  # noqa: BLE001
            events.error(PHASE_RENDEZVOUS, KIND_RENDEZVOUS, f"init_process_group failed: {error}")
            return EXIT_ENVIRONMENT
        self.barrier = dist.barrier
        INPUT_GROUPS.install(dist, world)

    def start_worker_group(self, store, worker, key):
        """One worker's port through the judges' store (judge rank 0 asks its worker to listen on a free
        one), then its "init". A failure to reach the worker is kept in init_sent, reported by
        join_workers: the other ranks' workers then fail to connect, and this rank says why."""
        rank, world = self.rank, self.world
        if rank == 0:
            # The workers' store listens before any other rank's worker looks for it.
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
                probe.bind(("", 0))
                free_port = probe.getsockname()[1]
            try:
                reply = worker.request({"op": "store", "host": os.environ.get("MASTER_ADDR", "127.0.0.1"),
                                        "port": free_port, "world_size": world})
                if type(reply.get("port")) is not int or not 0 < reply["port"] < 65536:
                    raise ProtocolError(f"a store port {str(reply.get('port'))[:20]}")
            except (CandidateRaised, CandidateGone, ProtocolError) as error:
                self.init_sent[key] = error
                reply = {"port": 0}  # the other ranks' workers fail to connect; this rank reports
            store.set(key, str(reply["port"]))
        port = int(store.get(key))
        if key not in self.init_sent:
            try:
                worker.send({"op": "init", "rank": rank, "world_size": world, "local_rank": self.local_rank,
                             "device": "cuda" if self.cuda else "cpu",
                             "master_addr": os.environ.get("MASTER_ADDR", "127.0.0.1"), "master_port": port,
                             "checkout": self.pkb["checkout"]})
            except CandidateGone as error:
                self.init_sent[key] = error

    def join_workers(self):
        """The workers' own groups, on the ports judge rank 0 picked: their answer to "init". Any failure
        here is the environment's: no candidate code has run yet."""
        events, rank, torch, device = self.events, self.rank, self.torch, self.device
        for worker, key, who in self.workers:
            worker.torch, worker.device = torch, device
            wrapped = f" (started through {os.path.basename(worker.wrapper[0])}; {worker.sandbox.description[:300]})" \
                if worker.wrapper else ""
            try:
                if self.cuda and self.ipc is None:
                    torch.zeros(1, device=device)  # the primary context, current on this thread
                    self.ipc = channel.CudaIpc()
                    self.ipc.require_context()
                worker.ipc = self.ipc
                if key in self.init_sent:
                    raise self.init_sent[key]
                _, fds = worker.reply()
                channel.close_fds(fds)
            except CandidateRaised as error:
                failure_kind = error.kind if error.kind in (KIND_ENVIRONMENT, KIND_RENDEZVOUS) else KIND_ENVIRONMENT
                events.error(PHASE_RENDEZVOUS, failure_kind, f"{who} on rank {rank}: {error.message}")
                return EXIT_ENVIRONMENT
            except CandidateGone as error:
                events.error(PHASE_RENDEZVOUS, KIND_ENVIRONMENT,
                             f"{who} on rank {rank} {error} before it joined its process group{wrapped}")
                return EXIT_ENVIRONMENT
            except ProtocolError as error:
                events.error(PHASE_RENDEZVOUS, KIND_ENVIRONMENT,
                             f"{who} on rank {rank} broke the channel's rules at its start: {error}")
                return EXIT_ENVIRONMENT
            except OSError as error:
                events.error(PHASE_RENDEZVOUS, KIND_ENVIRONMENT, f"the CUDA driver's IPC on rank {rank}: {error}")
                return EXIT_ENVIRONMENT

    # --- the loads

    def load(self):
        """The compile phase: the workers load their modules while the judge imports PKB's reference and
        input builder; then their answers. A candidate that fails to import broke the solution; a
        reference that fails anywhere is the environment's (the checkout is broken)."""
        events, pkb = self.events, self.pkb
        events.phase(PHASE_COMPILE)
        load_failed = reference_load_failed = None
        if self.candidate is not None:
            try:
                self.candidate.send({"op": "load", "solution_file": pkb["solution_file"]})  # loads while the judge does
            except CandidateGone as error:
                load_failed = error
        if self.timing_worker is not None:
            try:
                self.timing_worker.send({"op": "load", "solution_file": pkb["reference_file"]})
            except CandidateGone as error:
                reference_load_failed = error
        try:
            from utils.input_output_tensors import create_input_tensor
            self.reference_solution = channel.load_module("pkbw_pkb_reference", pkb["reference_file"]).solution
        except Exception:  # noqa: BLE001 - the checkout is broken: not the candidate's fault
            events.error(PHASE_COMPILE, KIND_ENVIRONMENT, "the PKB checkout's reference or inputs failed to load:\n"
                         + traceback.format_exc())
            return EXIT_ENVIRONMENT
        self.create_input_tensor = create_input_tensor
        if self.candidate is not None:
            code = self.candidate_loaded(load_failed)
            if code is not None:
                return code
        if self.timing_worker is not None:
            try:
                if reference_load_failed is not None:
                    raise reference_load_failed
                _, fds = self.timing_worker.reply()
                channel.close_fds(fds)
            except (CandidateRaised, CandidateGone, ProtocolError) as error:
                detail = error.traceback if isinstance(error, CandidateRaised) else str(error)
                events.error(PHASE_COMPILE, KIND_ENVIRONMENT,
                             f"the reference's timing worker on rank {self.rank} failed to load the reference:\n{detail}")
                return EXIT_ENVIRONMENT

    def candidate_loaded(self, load_failed):
        """The candidate's answer to "load" (or the error that kept the request from it)."""
        events = self.events
        try:
            if load_failed is not None:
                raise load_failed
            _, fds = self.candidate.reply()
            channel.close_fds(fds)
        except CandidateRaised as error:
            events.error(PHASE_COMPILE, KIND_SOLUTION_ERROR, "the candidate failed to import:\n" + error.traceback)
            return EXIT_SOLUTION_BROKE
        except (CandidateGone, ProtocolError) as error:
            self.candidate_failed(PHASE_COMPILE, None, error, "importing the candidate")
            return EXIT_SOLUTION_BROKE

    def read_problem(self):
        """The problem as the configuration states it: PKB's dtype, id, shape, tolerances and trials."""
        config, pkb = self.config, self.pkb
        self.dtype = getattr(self.torch, pkb["torch_dtype"])
        self.problem_id = int(pkb["problem_id"])
        self.shape = (int(config["m"]), int(config["n"]))
        self.atol, self.rtol = float(config["atol"]), float(config["rtol"])
        self.trials = int(config["trials"])

    # --- failures of the candidate's process

    def candidate_failed(self, phase, trial, error, where):
        """Reports a failed request to the candidate's process at once (error event and, in a trial,
        the trial's rank_result), as the in-process candidate's exceptions were."""
        events, rank = self.events, self.rank
        if isinstance(error, CandidateRaised):
            kind = KIND_CUDA_ERROR if error.kind == KIND_CUDA_ERROR else KIND_SOLUTION_ERROR
            if error.kind == "invalid_output":
                text = f"the candidate's output on rank {rank}, trial {trial} cannot be taken: {error.message}"
                status, short = STATUS_INVALID_OUTPUT, f"invalid output: {error.message[:500]}"
            else:
                text = f"the candidate raised on rank {rank}, {where}:\n{error.traceback}"
                status = STATUS_CRASH if kind == KIND_CUDA_ERROR else STATUS_ERROR
                short = f"candidate raised {error.type}: {error.message[:500]}"
        elif isinstance(error, CandidateGone):
            kind, status = KIND_SOLUTION_ERROR, STATUS_CRASH
            text = f"the candidate's process on rank {rank} {error} ({where})"
            short = f"the candidate's process {error}"
        else:
            kind, status = KIND_SOLUTION_ERROR, STATUS_INVALID_OUTPUT
            text = f"the candidate's process on rank {rank} broke the channel's rules ({where}): {error}"
            short = f"the candidate's process sent a bad message: {str(error)[:500]}"
        left = self.resources.release()
        if left.count:
            text += f"; killed {left.count} process(es) it left"
        events.error(phase, kind, text)
        if trial is not None:
            events.send("rank_result", trial=trial, status=status, message=short, tensors=[],
                        guard_violations=[], mutated_inputs=[], outputs={})

    # --- one trial

    def inputs(self, trial):
        """A trial's inputs, built by the checkout's create_input_tensor (the groups it makes recorded)."""
        with INPUT_GROUPS.record():
            return tuple(self.create_input_tensor(self.rank, self.world, self.problem_id, self.shape, self.dtype,
                                                  trial, device=self.device))

    def call_candidate(self, trial, first, x):
        """The candidate's call in its process: its output, or InvalidOutput; SolutionFailed (reported)
        when it raised, died or broke the channel."""
        events = self.events
        # The first call of a side may JIT-compile (load_inline): it runs under the compile deadline.
        events.phase(PHASE_COMPILE if first else PHASE_CANDIDATE, trial)
        try:
            reply, fds = self.candidate.send_inputs("call", x, {"trial": trial})
            return self.candidate.take_outputs(reply, fds)
        except CandidateRaised as error:
            if error.kind == "invalid_output":
                # The solution returned; only its value cannot be described. A verdict, like a
                # mismatch: this rank still takes part in the reference's collectives and the stop.
                return InvalidOutput(error.message)
            self.candidate_failed(PHASE_CANDIDATE, trial, error, f"trial {trial}")
            raise SolutionFailed() from error
        except (CandidateGone, ProtocolError) as error:
            self.candidate_failed(PHASE_CANDIDATE, trial, error, f"trial {trial}")
            raise SolutionFailed() from error

    def call_reference(self, trial, first, x):
        """PKB's reference, here in the judge: its output; SolutionFailed (reported) when it raised."""
        events, torch = self.events, self.torch
        events.phase(PHASE_COMPILE if first else PHASE_REFERENCE, trial)
        try:
            result = self.reference_solution(*x)
            if self.cuda:
                torch.cuda.synchronize()
            return result
        except Exception as error:  # noqa: BLE001
            text = traceback.format_exc()
            kind = channel.error_kind(error)
            events.error(PHASE_REFERENCE, kind, f"the reference raised on rank {self.rank}, trial {trial}:\n{text}")
            events.send("rank_result", trial=trial, status=STATUS_CRASH if kind == KIND_CUDA_ERROR else STATUS_ERROR,
                        message=f"reference raised {type(error).__name__}: {str(error)[:500]}", tensors=[],
                        guard_violations=[], mutated_inputs=[], outputs={})
            raise SolutionFailed() from error

    def run_trial(self, trial):
        """One trial: inputs, the candidate's call, the reference's, the comparison and its rank_result.
        True when every rank agrees to stop (PKB stops at the first mismatching trial)."""
        events, barrier = self.events, self.barrier
        events.phase(PHASE_INPUTS, trial)
        # One build per trial: the candidate's process gets a copy, the reference these (the
        # candidate never touches them, so they are pristine when the reference runs).
        x = self.inputs(trial)
        # The candidate first, as pkbw-rank does (its process could not see this trial's result
        # anyway; the order keeps the two engines alike).
        cand_out = self.call_candidate(trial, trial == 0, x) if self.run_candidate else None
        barrier()
        ref_out = self.call_reference(trial, trial == 0, x) if self.run_reference else None
        barrier()
        self.trials_run += 1
        if trial == 0:
            self.first_output = ref_out if self.run_reference else \
                (None if isinstance(cand_out, InvalidOutput) else cand_out)
        if not (self.run_reference and self.run_candidate):  # a dryrun: nothing to compare, no stop to agree on
            invalid = isinstance(cand_out, InvalidOutput)
            events.send("rank_result", trial=trial, status=STATUS_INVALID_OUTPUT if invalid else STATUS_PASS,
                        message=f"the candidate's output cannot be taken: {cand_out.message}"[:4000] if invalid
                        else "", tensors=[], guard_violations=[], mutated_inputs=[], outputs={})
            return False
        events.phase(PHASE_COMPARE, trial)
        problem = self.compare(trial, ref_out, cand_out)
        # PKB stops at the first mismatching trial; every rank must agree to stop together.
        flag = self.torch.tensor([1 if problem else 0], device=self.device)
        self.dist.all_reduce(flag, op=self.dist.ReduceOp.MAX)
        return bool(flag.item() and not self.config.get("all_trials"))

    def compare(self, trial, ref_out, cand_out):
        """PKB's rule on this rank's outputs, both written as safetensors for the launcher's own
        comparison, and the trial's rank_result; the problem found, or "" / None when they agree."""
        events, rank = self.events, self.rank
        if isinstance(cand_out, InvalidOutput):
            problem = f"the candidate's output cannot be taken: {cand_out.message}"
            events.send("rank_result", trial=trial, status=STATUS_INVALID_OUTPUT, message=problem[:4000],
                        tensors=[], guard_violations=[], mutated_inputs=[], outputs={})
            return problem
        torch = self.torch
        problem = pkb_mismatch(ref_out, cand_out, self.atol, self.rtol, torch)
        folder = os.path.join(self.out_dir, LAYOUT_TRIAL_DIR.format(trial=trial))
        os.makedirs(folder, exist_ok=True)
        paths = {}
        for side, value in (("reference", ref_out), ("candidate", cand_out)):
            tensors, values = output_leaves(value, torch)
            paths[side] = os.path.join(folder, LAYOUT_TRIAL_OUTPUTS.format(rank=rank, side=side))
            write_safetensors(paths[side], tensors, values, torch)
        events.send("rank_result", trial=trial, status=STATUS_MISMATCH if problem else STATUS_PASS,
                    message=problem or "", tensors=[], guard_violations=[], mutated_inputs=[],
                    outputs=paths, keep_outputs=bool(self.config.get("keep_outputs")) or bool(problem),
                    pkb_rule=True)
        return problem

    # --- the trials, the traced pass, perf

    def evaluate(self):
        """The trials until every rank agrees to stop; when all ran, the traced pass and perf. A side's
        failure (SolutionFailed, reported where it happened) or inputs that cannot cross end the rank
        from any of them."""
        events, config = self.events, self.config
        try:
            for trial in range(self.trials):
                if self.run_trial(trial):
                    return
            if isinstance(config.get("trace"), dict):
                code = self.traced_pass(config["trace"], self.inputs(0))
                if code != EXIT_OK:
                    return code
            if config.get("perf"):
                return self.perf()
        except SolutionFailed:
            return EXIT_SOLUTION_BROKE
        except InputsCannotCross as error:
            # pkbw's limit, not the candidate's doing: every rank meets it with the same inputs.
            events.error(PHASE_INPUTS, KIND_INTERNAL,
                         f"rank {self.rank}: PKB's inputs cannot cross to the worker's process: {error}")
            return EXIT_INTERNAL

    def traced_pass(self, trace, x):
        """The traced pass (docs/tracing.md), after correctness: each side profiles its own iterations
        (channel.profile_iterations), the reference here, the candidate in its process. A profiler that
        cannot record is said on stderr and costs only the trace; a side that raises fails the run."""
        events, rank = self.events, self.rank
        events.phase(PHASE_TRACE, 0)
        folder = str(trace.get("dir", os.path.join(self.out_dir, LAYOUT_TRACE_DIR)))
        iterations = int(trace.get("iterations", 10))
        os.makedirs(os.path.join(folder, LAYOUT_CANDIDATE_TRACE_DIR), exist_ok=True)
        if self.run_reference:
            try:
                channel.profile_iterations(self.torch, self.cuda, self.dist.barrier, self.reference_solution, x,
                                           iterations, os.path.join(folder, LAYOUT_TORCH_TRACE.format(rank=rank, side="reference")))
            except channel.TraceUnavailable as error:
                print(f"pkbw_pkb_rank: rank {rank}: no reference trace: {error}", file=sys.stderr)
            except Exception as error:  # noqa: BLE001
                events.error(PHASE_TRACE, channel.error_kind(error),
                             f"the reference raised on rank {rank} in the traced pass:\n{traceback.format_exc()}")
                return EXIT_SOLUTION_BROKE
        if self.run_candidate:
            try:
                reply, fds = self.candidate.send_inputs("trace", x, {"iterations": iterations})
            except (CandidateRaised, CandidateGone, ProtocolError) as error:
                self.candidate_failed(PHASE_TRACE, None, error, "the traced pass")
                return EXIT_SOLUTION_BROKE
            try:
                self.keep_candidate_trace(folder, reply, fds)
            finally:
                channel.close_fds(fds)
        return EXIT_OK

    def keep_candidate_trace(self, folder, reply, fds):
        """The candidate's trace, as its process sent it, written under trace/candidate; a trace that is
        missing or cannot be kept is said on stderr only (it costs the trace, not the run)."""
        rank = self.rank
        if reply.get("trace_missing") is not None or len(fds) != 1:
            print(f"pkbw_pkb_rank: rank {rank}: no candidate trace: "
                  f"{str(reply.get('trace_missing') or 'its process sent no trace')[:1000]}", file=sys.stderr)
            return
        data, why = read_candidate_trace(fds[0])
        name = LAYOUT_TORCH_TRACE.format(rank=rank, side="candidate")
        try:
            if data is not None:
                write_beside_candidate(os.path.join(folder, LAYOUT_CANDIDATE_TRACE_DIR), name, data)
        except OSError as error:
            why = f"cannot write trace/candidate/{name}: {error}"
        if why:
            print(f"pkbw_pkb_rank: rank {rank}: the candidate's trace is not kept: {why}", file=sys.stderr)

    def perf(self):
        """The perf phase: PKB's protocol, then pkbw's checked timing (Perf). Both sides' calls run in
        workers: the reference's timing worker, the candidate's process."""
        events, options = self.events, self.config["perf"]
        events.phase(PHASE_PERF)
        perf = Perf(self, options if isinstance(options, dict) else {})
        sides = [TimedSide(name, worker, self.rank) for name, worker in
                 (("reference", self.timing_worker), ("candidate", self.candidate)) if worker is not None]
        try:
            perf.count_blocks(len(sides))
            if perf.o.get("pkb", True):
                perf.pkb(sides, self.inputs(0))
            if perf.o.get("pkbw", True) and sides:
                perf.pkbw(sides, self.inputs, self.first_output)
        except TimingWorkerFailed as error:
            events.error(PHASE_PERF, KIND_INTERNAL, str(error))
            return EXIT_INTERNAL
        except (CandidateRaised, CandidateGone, ProtocolError) as error:
            self.candidate_failed(PHASE_PERF, None, error, "perf")
            return EXIT_SOLUTION_BROKE

    # --- the teardown

    def teardown(self):
        """The workers leave their groups while the judges leave theirs; PKB only warns about a teardown
        that fails (the verdicts are out). Then the candidate's tree is released and accounted for, and
        rank_done ends the rank."""
        events, rank, candidate = self.events, self.rank, self.candidate
        events.phase(PHASE_TEARDOWN)
        try:
            threads = len(os.listdir(f"/proc/{candidate.pid}/task")) if candidate is not None else 0
        except OSError:
            threads = 0
        leaving = []
        for worker, _, who in self.workers:
            try:
                worker.send({"op": "exit"})  # the workers leave their groups while the judges leave theirs
                leaving.append((worker, who))
            except CandidateGone as error:
                print(f"pkbw_pkb_rank: rank {rank}: {who} {error} before the teardown", file=sys.stderr)
        try:
            self.dist.barrier()
            self.dist.destroy_process_group()
        except Exception as error:  # noqa: BLE001 - PKB only warns here
            events.error(PHASE_TEARDOWN, KIND_NCCL_ERROR, f"process group teardown: {error}")
        for worker, who in leaving:
            try:
                worker.reply(CANDIDATE_LEAVE_S)
                worker.process.wait(timeout=CANDIDATE_EXIT_S)
            except (CandidateGone, CandidateRaised, ProtocolError, TimeoutError, subprocess.TimeoutExpired) as error:
                # PKB only warns about teardown; the candidate's verdicts are already out.
                print(f"pkbw_pkb_rank: rank {rank}: {who} did not leave cleanly: {error}", file=sys.stderr)
        if candidate is not None:
            described = candidate.container.describe()
            left = self.resources.release()
            events.send("candidate", stage="finished", threads=threads, containment=described,
                        leftovers=listed_processes(left.killed), leftover_count=left.count,
                        killed_groups=left.groups, escaped=listed_processes(left.escaped))
        events.send("rank_done", trials_run=self.trials_run)
        return EXIT_OK


def listed_processes(processes):
    """[(pid, command)] as the candidate's finished event lists them: at most 32 (a fork bomb's count
    is in leftover_count), each command cut to 200 characters."""
    return [{"pid": pid, "command": command[:200]} for pid, command in processes[:32]]


def run(args, resources):
    """One rank's judging (RankJudge); its exit code. main() releases `resources` whatever happens."""
    return RankJudge(args, resources).run()


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
