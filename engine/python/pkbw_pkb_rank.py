#!/usr/bin/env python3
"""pkbw's rank program for ParallelKernelBench (PKB) Python solutions.

The pkbw launcher starts one of these per rank, exactly as it starts pkbw-rank (docs/engine.md, "Rank
program contract"): RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT in the environment, the
JSON-lines events written to the pipe PKBW_CONTROL_FD, the configuration file given by --config. The
configuration's "pkb" object names the PKB checkout, the problem's reference and the candidate.

Per rank, in one process: initialise the process group as PKB's backend init does, import the
reference and the candidate as modules, then for each trial build the inputs with the checkout's own
create_input_tensor (twice, so a side that mutates its inputs cannot change the other's), call the
reference, call the candidate, decide with PKB's rule (torch.allclose on .float(), rtol relative to the
candidate, recursing over tuples, lists and dicts) and write both outputs as safetensors. The launcher
re-compares those files with pkbw's comparison (core/compare.h) for the full error statistics. With
perf, both sides are timed here with PKB's protocol and pkbw's ABBA blocks (docs/pkb-interop.md).

Exit codes follow pkbw-rank: 0 finished, 3 environment (no torch, no GPU, process group), 4 the
solution raised or broke the CUDA context, 5 internal error.
"""

import argparse
import importlib.util
import json
import math
import os
import socket
import struct
import sys
import time
import traceback

EXIT_OK, EXIT_ENVIRONMENT, EXIT_SOLUTION, EXIT_INTERNAL = 0, 3, 4, 5


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


# ---------------------------------------------------------------------------------------------------
# Timing

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


class Perf:
    """PKB's protocol as utils/performance.py runs it, and pkbw's (docs/perf.md): per block, ranks
    start together, each sample brackets one call, sides alternate ABBA, inputs rotate past 3x L2."""

    def __init__(self, rank_state, options):
        self.s = rank_state
        self.o = options

    def sync(self):
        if self.s.cuda:
            self.s.torch.cuda.synchronize()

    def pkb(self, name, fn, args):
        torch, o = self.s.torch, self.o
        slot = first_tensor_slot(args, torch)
        if slot is None:
            raise RuntimeError("no tensor argument to time (PKB's worker raises here too)")
        first = slot_tensor(args, slot)
        l2 = self.s.l2_bytes
        size = first.element_size() * first.numel()
        groups = 1 if size == 0 or size >= 3 * l2 else min(max(3 * l2 // size + 1, 2), 128)
        copies = [first.clone() for _ in range(groups)]
        calls = [with_slot(args, slot, c) for c in copies]
        warmup, iterations = o.get("pkb_warmup", 500), o.get("pkb_iterations", 100)
        self.sync()
        self.s.barrier()
        for i in range(warmup):
            fn(*calls[i % groups])
        self.sync()
        timer = Timer(torch, self.s.cuda, iterations + 1)
        timer.mark(0)
        for i in range(iterations):
            fn(*calls[i % groups])
            timer.mark(i + 1)
        self.sync()
        samples = [timer.between(i, i + 1) for i in range(iterations)]
        self.s.events.send("perf_result", protocol="pkb", side=name, block=0, samples_ms=samples,
                           num_input_groups=groups, l2_cache_size_bytes=l2, timed_tensor_bytes=size)

    def rotation(self, args):
        """Copies of every top-level tensor argument, enough that one pass exceeds 3x L2."""
        torch = self.s.torch
        size = sum(a.element_size() * a.numel() for a in args if isinstance(a, torch.Tensor))
        count = 1
        if self.o.get("rotation", "copies") == "copies" and size > 0:
            count = min(max(math.ceil(3 * self.s.l2_bytes / size), 1), 128)
        sets = [list(args)]
        for _ in range(count - 1):
            sets.append([a.clone() if isinstance(a, torch.Tensor) else a for a in args])
        return sets, size

    def block(self, fn, sets, iterations, cursor):
        self.sync()
        self.s.barrier()
        timer = Timer(self.s.torch, self.s.cuda, 2 * iterations)
        for i in range(iterations):
            timer.mark(2 * i)
            fn(*sets[cursor[0]])
            timer.mark(2 * i + 1)
            cursor[0] = (cursor[0] + 1) % len(sets)
        self.sync()
        return [timer.between(2 * i, 2 * i + 1) for i in range(iterations)]

    def pkbw(self, sides):
        """sides: [(name, fn, args)], reference first."""
        o = self.o
        prepared = []
        for name, fn, args in sides:
            sets, size = self.rotation(args)
            prepared.append((name, fn, sets, size))
        cursor = [0]
        for name, fn, sets, _ in prepared:
            if o.get("warmup", 50) > 0:
                self.block(fn, sets, o.get("warmup", 50), cursor)
        pairs, iterations = o.get("pairs", 5), o.get("iterations", 100)
        order = []
        for p in range(pairs):  # core/perf_stats.cpp block_order: ABBA
            order += [0, 1] if p % 2 == 0 else [1, 0]
        for b, which in enumerate(order):
            if len(prepared) == 1:
                if b >= pairs:
                    break
                which = 0
            name, fn, sets, size = prepared[which]
            samples = self.block(fn, sets, iterations, cursor)
            self.s.events.send("perf_result", protocol="pkbw", side=name, block=b, samples_ms=samples,
                               input_copies=len(sets), copy_bytes=size, l2_cache_size_bytes=self.s.l2_bytes,
                               repeat=1, rotation=o.get("rotation", "copies"))


# ---------------------------------------------------------------------------------------------------

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


class RankState:
    pass


def versions(torch, cuda):
    nccl = ""
    if cuda:
        try:
            v = torch.cuda.nccl.version()
            nccl = ".".join(str(x) for x in v) if isinstance(v, tuple) else str(v)
        except Exception:
            nccl = "unknown"
    return nccl


def run(args):
    with open(args.config) as f:
        config = json.load(f)
    pkb = config["pkb"]
    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    local_rank = int(os.environ.get("LOCAL_RANK", rank))
    out_dir = config["output_dir"]
    events = Events(rank, os.path.join(out_dir, f"rank_{rank}.events.jsonl"))
    state = RankState()
    state.events = events
    try:
        import torch
        import torch.distributed as dist
    except Exception as error:  # noqa: BLE001 - any import failure is the environment's
        events.error("start", "environment", f"{sys.executable} cannot import torch: {error}")
        return EXIT_ENVIRONMENT
    state.torch = torch
    cuda = pkb.get("device", "cuda") == "cuda"
    state.cuda = cuda
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
                program="pkbw_pkb_rank.py")

    # PKB's worker: Hopper-only JIT unless set, and a torch extensions folder per rank so that ranks
    # never race on one .so (kept across runs under pkbw's cache so warm runs do not recompile).
    os.environ.setdefault("TORCH_CUDA_ARCH_LIST", "9.0")
    if pkb.get("extensions_dir"):
        folder = os.path.join(pkb["extensions_dir"], f"pkb_rank_{rank}")
        os.environ["TORCH_EXTENSIONS_DIR"] = folder
        remove_stale_locks(folder)
    sys.path.insert(0, pkb["checkout"])

    events.phase("rendezvous")
    try:
        os.environ["LOCAL_RANK"] = str(local_rank)
        kwargs = {"backend": "nccl" if cuda else "gloo", "init_method": "env://", "rank": rank, "world_size": world}
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

    events.phase("compile")
    try:
        from utils.input_output_tensors import create_input_tensor
        reference = load_module("pkbw_pkb_reference", pkb["reference_file"]).solution
    except Exception:  # noqa: BLE001 - the checkout is broken: not the candidate's fault
        events.error("compile", "environment", "the PKB checkout's reference or inputs failed to load:\n"
                     + traceback.format_exc())
        return EXIT_ENVIRONMENT
    candidate = None
    if pkb.get("solution_file"):
        try:
            candidate = load_module("solution_mod", pkb["solution_file"]).solution
        except Exception:  # noqa: BLE001
            events.error("compile", "solution_error", "the candidate failed to import:\n" + traceback.format_exc())
            return EXIT_SOLUTION

    dtype = getattr(torch, pkb["torch_dtype"])
    problem_id = int(pkb["problem_id"])
    shape = (int(config["m"]), int(config["n"]))
    atol, rtol = float(config["atol"]), float(config["rtol"])
    trials = int(config["trials"])
    run_reference = config.get("mode") != "dryrun" or config.get("dryrun_side") == "reference"
    run_candidate = candidate is not None and (config.get("mode") != "dryrun" or config.get("dryrun_side") != "reference")

    def inputs(trial):
        return tuple(create_input_tensor(rank, world, problem_id, shape, dtype, trial, device=device))

    def call(name, fn, trial, first):
        # The first call of a side may JIT-compile (load_inline): it runs under the compile deadline.
        events.phase("compile" if first else name, trial)
        try:
            result = fn(*inputs(trial))
            if cuda:
                torch.cuda.synchronize()
            return result
        except Exception as error:  # noqa: BLE001
            text = traceback.format_exc()
            kind = "cuda_error" if "CUDA error" in str(error) or "cudaError" in str(error) else "solution_error"
            events.error(name, kind, f"the {name} raised on rank {rank}, trial {trial}:\n{text}")
            events.send("rank_result", trial=trial, status="crash" if kind == "cuda_error" else "error",
                        message=f"{name} raised {type(error).__name__}: {str(error)[:500]}", tensors=[],
                        guard_violations=[], mutated_inputs=[], outputs={})
            raise SolutionFailed() from error

    trials_run = 0
    keep = bool(config.get("keep_outputs"))
    try:
        for trial in range(trials):
            events.phase("inputs", trial)
            # The candidate first, as pkbw-rank does: while it runs, no result of this trial exists in
            # the process for it to find and copy.
            cand_out = call("candidate", candidate, trial, trial == 0) if run_candidate else None
            dist.barrier()
            ref_out = call("reference", reference, trial, trial == 0) if run_reference else None
            dist.barrier()
            trials_run += 1
            if not (run_reference and run_candidate):
                events.send("rank_result", trial=trial, status="pass", message="", tensors=[],
                            guard_violations=[], mutated_inputs=[], outputs={})
                continue
            events.phase("compare", trial)
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
            if config.get("perf"):
                events.phase("perf")
                timing = Perf(state, config["perf"] if isinstance(config["perf"], dict) else {})
                sides = []
                if run_reference:
                    sides.append(("reference", reference, inputs(0)))
                if run_candidate:
                    sides.append(("candidate", candidate, inputs(0)))
                if timing.o.get("pkb", True):
                    for name, fn, x in sides:
                        timing.pkb(name, fn, x)
                if timing.o.get("pkbw", True):
                    timing.pkbw(sides)
    except SolutionFailed:
        return EXIT_SOLUTION
    events.phase("teardown")
    try:
        dist.barrier()
        dist.destroy_process_group()
    except Exception as error:  # noqa: BLE001 - PKB only warns here
        events.error("teardown", "nccl_error", f"process group teardown: {error}")
    events.send("rank_done", trials_run=trials_run)
    return EXIT_OK


class SolutionFailed(Exception):
    pass


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True)
    args = parser.parse_args()
    try:
        code = run(args)
    except Exception:  # noqa: BLE001
        traceback.print_exc()
        code = EXIT_INTERNAL
    sys.stdout.flush()
    sys.stderr.flush()
    # os._exit: a candidate's threads or a wedged NCCL communicator must not keep the process alive.
    os._exit(code)


if __name__ == "__main__":
    main()
