"""PKB's Python judge: the candidate's process (and the reference's timing worker), seen from the judge:
started in its sandbox and its container, its inputs handed over the channel, its replies read, its
traces taken as untrusted, its tree ended.
"""

import contextlib
import ctypes
import json
import os
import select
import shlex
import signal
import socket
import stat
import subprocess
import sys
import time
import traceback

import pkbw_containment as containment
import pkbw_input_parking as parking
import pkbw_sandbox
from pkbw_channel import PR_SET_PDEATHSIG, Channel, ChannelClosed, ProtocolError, close_fds
from pkbw_pkb_timed_loops import TRACE_LIMIT_BYTES
from pkbw_tensor_layout import dense_layout, span_elements
from pkbw_tensor_transport import OpenedCuda, host_tensor, map_host, pack_host
from pkbw_value_encoding import InputEncoder, decode_value, encode_value


CANDIDATE_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pkbw_pkb_candidate.py")
PR_SET_DUMPABLE, PR_SET_CHILD_SUBREAPER = 4, 36
# The teardown: how long the candidate's process may take to leave its group, then to exit (together
# well inside the launcher's 30 s teardown deadline).
CANDIDATE_LEAVE_S, CANDIDATE_EXIT_S = 15.0, 5.0
# Where judge rank 0 leaves the candidates' port, and the reference timing workers', in the judges' store.
CANDIDATE_PORT_KEY = "pkbw/candidate_master_port"
REFERENCE_PORT_KEY = "pkbw/reference_worker_master_port"


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
        _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
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
        self.channel = Channel(parent)
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
        self.parked = None  # pkbw_input_parking.ParkedInputs of the call in flight, until restore_inputs

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
            close_fds(fds)
            raise ProtocolError(f"a reply numbered {str(message.get('seq'))[:20]} to request {self.sequence}")
        if message.get("ok") is not True:
            close_fds(fds)
            if message.get("kind") == "input_error":
                who = "the candidate's process" if self.untrusted else "the reference's timing worker"
                raise InputsCannotCross(f"{who} could not rebuild them: {str(message.get('message'))[:2000]}")
            raise CandidateRaised(message)
        return message, fds

    def request(self, message, fds=()):
        self.send(message, fds)
        reply, reply_fds = self.reply()
        close_fds(reply_fds)
        return reply

    # Values both ways: host tensors in one memfd, CUDA tensors copied by the judge into buffers the
    # candidate's process allocated (see pkbw_tensor_transport.py for why the judge exports nothing).

    def send_inputs(self, op, args, fields, park=None):
        """Stages `args` in the worker's memory and sends the request. park, None or (before, after): where
        the judge's CUDA inputs are large (pkbw_input_parking.py) their bytes wait in host memory, and the
        worker releases its staged copy after the call, until restore_inputs(); before() and after() are
        called around the parking (the judge's phase events: its copies are not the candidate's time)."""
        torch = self.torch
        host, device, leaves = [], [], []

        def tensor(t, path):
            t = t.detach()
            (device if t.is_cuda else host).append(t)
            leaves.append(("cuda" if t.is_cuda else "host", len(device if t.is_cuda else host) - 1))
            return len(leaves) - 1

        try:
            tree = encode_value(list(args), torch, tensor, "input", inputs=InputEncoder(torch, tensor))
        except TypeError as error:
            raise InputsCannotCross(str(error)) from None
        if device:
            wanted = [{"dtype": str(t.dtype).split(".")[-1], "shape": list(t.shape),
                       "stride": dense_layout(t)} for t in device]
            given = self.request({"op": "alloc", "tensors": wanted}).get("tensors")
            if not isinstance(given, list) or len(given) != len(device):
                raise ProtocolError("an alloc reply without one description per input")
            opened = OpenedCuda(self.ipc, torch, self.device)
            try:
                for t, want, got in zip(device, wanted, given):
                    nbytes = span_elements(want["shape"], want["stride"]) * t.element_size()
                    if nbytes == 0:
                        continue
                    if not isinstance(got, dict):
                        raise ProtocolError("an alloc reply entry that is not an object")
                    span = opened.span(got.get("handle"), got.get("offset"), nbytes)
                    span.view(t.dtype).as_strided(want["shape"], want["stride"]).copy_(t)
            finally:
                opened.close()
            if park is not None:
                self.park_inputs(device, *park)
        fd, host_specs = pack_host(host, torch, seal=False, keep_layout=True)
        specs = [host_specs[i] if where == "host" else {"transport": "staged", "index": i} for where, i in leaves]
        message = dict(fields, op=op, args=tree, tensors=specs)
        if self.parked is not None:
            message["release_inputs"] = True
        message.update(INPUT_GROUPS.fields())
        try:
            self.send(message, [fd] if fd is not None else [])
        finally:
            if fd is not None:
                os.close(fd)
        return self.reply()

    def park_inputs(self, tensors, before, after):
        torch = self.torch
        free, total = torch.cuda.mem_get_info(self.device)
        if not parking.should_park(tensors, total, free):
            return
        before()
        parked = parking.ParkedInputs(torch, tensors, torch.cuda.empty_cache)
        if parked.park():
            self.parked = parked
            print(f"pkbw: the judge's inputs ({parked.nbytes() / 1e9:.1f} GB; the device: {total / 1e9:.0f} GB, "
                  f"{free / 1e9:.0f} GB free after staging) wait in host memory during the candidate's call",
                  file=sys.stderr)
        after()

    def restore_inputs(self):
        """The judge's inputs back on the device, as they were: None, or why they could not come back
        (the device's memory is taken: the candidate's process still holds it). A no-op unless
        send_inputs parked them."""
        if self.parked is None:
            return None
        parked, self.parked = self.parked, None
        try:
            parked.restore()
        except (RuntimeError, MemoryError) as error:
            free, total = self.torch.cuda.mem_get_info(self.device)
            return (f"the judge could not take its copy of the inputs back onto the device after the candidate's "
                    f"call ({parked.nbytes() / 1e9:.1f} GB; {free / 1e9:.1f} of {total / 1e9:.0f} GB "
                    f"free): {str(error).splitlines()[0][:300] if str(error) else type(error).__name__}")
        return None

    def take_outputs(self, reply, fds):
        """The outputs of a call reply, in the judge's hands: host tensors as read-only views of the
        sealed memfd, CUDA tensors copied out of the candidate's memory."""
        torch = self.torch
        mapping, size = None, 0
        try:
            if len(fds) > 1:
                raise ProtocolError(f"{len(fds)} file descriptors on one reply (one memfd at most)")
            if fds:
                mapping, size = map_host(fds[0], writable=False, require_sealed=True)
        finally:
            close_fds(fds)
        specs = reply.get("tensors")
        if not isinstance(specs, list):
            raise ProtocolError("a call reply without a tensor list")
        opened = OpenedCuda(self.ipc, torch, self.device) if self.ipc is not None else None

        def tensor(index):
            if type(index) is not int or not 0 <= index < len(specs) or not isinstance(specs[index], dict):
                raise ProtocolError(f"a tensor reference {str(index)[:20]} outside the reply's tensor list")
            spec = specs[index]
            if spec.get("transport") == "memfd":
                return host_tensor(mapping, size, spec, torch, contiguous_only=True)
            if spec.get("transport") == "cuda" and opened is not None:
                return opened.output(spec).clone()
            raise ProtocolError(f"a tensor transport {str(spec.get('transport'))[:20]!r}")

        try:
            return decode_value(reply.get("result"), torch, tensor)
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
    if info.st_size > TRACE_LIMIT_BYTES:
        return None, f"{info.st_size} bytes, over {TRACE_LIMIT_BYTES}"
    os.lseek(fd, 0, os.SEEK_SET)
    chunks, size = [], 0
    while size <= TRACE_LIMIT_BYTES:
        chunk = os.read(fd, min(1 << 20, TRACE_LIMIT_BYTES + 1 - size))
        if not chunk:
            return b"".join(chunks), None
        chunks.append(chunk)
        size += len(chunk)
    return None, f"over {TRACE_LIMIT_BYTES} bytes"


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
