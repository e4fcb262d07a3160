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
(Timing), and the judge only measures. What both ends must agree on lives in modules the judge imports
too: the message framing (pkbw_channel.py), the encoding of values (pkbw_value_encoding.py), the tensor
descriptions and transports (pkbw_tensor_layout.py, pkbw_tensor_transport.py) and the timed loops
(pkbw_pkb_timed_loops.py).

Trust runs one way. The candidate process trusts its judge (the judge's inputs may hold pickled
objects, such as PKB's nn.Linear modules, whose tensors travel apart); the judge trusts nothing the
candidate process sends: its messages are JSON (never pickle), every tensor description is checked
against the memory it names, and host tensors come back in sealed memfds that the candidate can no
longer change.
"""

import argparse
import datetime
import gc
import os
import shutil
import socket
import sys
import tempfile
import traceback

import pkbw_cuda_errors
from pkbw_channel import Channel, ChannelClosed, ProtocolError, close_fds, die_with_parent
from pkbw_pkb_solution import OutputRefused, error_kind, load_module
from pkbw_pkb_timed_loops import TRACE_LIMIT_BYTES, OutputSlot, Timing, TraceUnavailable, profile_iterations
from pkbw_process_group import init_default_group
from pkbw_tensor_layout import contiguous_strides, dtype_named, slot_view
from pkbw_tensor_transport import CudaIpc, DeviceBytes, export_cuda, host_tensor, map_host, pack_host
from pkbw_value_encoding import InputDecoder, InputsNotRebuilt, decode_value, encode_value

STORE_TIMEOUT = datetime.timedelta(seconds=300)  # the launcher's rendezvous deadline is shorter


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
        try:
            # Rank 0's store is already listening ("store"), so no peer's connection is refused and
            # retried.
            store = self.store if self.store is not None else torch.distributed.TCPStore(
                message["master_addr"], int(message["master_port"]), self.world, self.rank == 0, STORE_TIMEOUT)
            init_default_group(dist, store, self.rank, self.world, self.device if self.cuda else None)
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
