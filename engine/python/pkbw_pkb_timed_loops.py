"""The timed and traced calls as a worker runs them (the candidate's process, the reference's timing
worker), and the judge for its own reference's trace: PKB's protocol, pkbw's calls over the judge's
slots, and torch's profiler over a side's iterations.
"""

import contextlib
import time

from pkbw_value_encoding import MAX_DEPTH, encode_value


# Timing (docs/pkb-interop.md, "Timing"): the judge measures, the workers only compute. Each side's
# calls run in a worker process: the candidate's own, and the reference's timing worker
# (pkbw_pkb_candidate.py with PKB's reference loaded). PKB's protocol (utils/performance.py) runs here
# too, timed by the worker itself as PKB times it: the PKB-compatible figure, never pkbw's.

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
