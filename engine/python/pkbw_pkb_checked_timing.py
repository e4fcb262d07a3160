"""PKB's Python judge: pkbw's checked timing (docs/pkb-interop.md, "Timing"), CheckedTiming, whose C++
counterpart is engine/runtime/checked_timing.cpp.
"""

import math
import secrets
import time

from pkbw_channel import ProtocolError
from pkbw_pkb_contract import (
    PERF_ITERATIONS, PERF_PAIRS, PERF_ROTATION, PERF_ROTATION_MEMORY_FRACTION, PERF_WARMUP, STATUS_MISMATCH, STATUS_PASS,
    STATUS_UNCHECKED
)
from pkbw_pkb_outputs import pkb_mismatch
from pkbw_pkb_timed_sides import PROBE_SPIN_US, GpuProbe, Stillness
from pkbw_pkb_timing_slots import HOST_MEMORY_BUDGET, Region, lay_out_inputs, lay_out_outputs, plan_calls
from pkbw_pkb_worker import INPUT_GROUPS
from pkbw_tensor_layout import dtype_named, item_size, slot_view
from pkbw_value_encoding import decode_value

# Timing (docs/pkb-interop.md, "Timing"): the judge measures, the workers only compute. Both sides'
# calls run in worker processes, the candidate's own and the reference's timing worker
# (pkbw_pkb_candidate.py with PKB's reference loaded, trusted, in a process group of its own); the
# judge's clock runs from its request to the reply of every rank's worker, less a round trip it
# calibrated on the trusted worker. Every timed call reads a fresh input set, drawn from a secret trial
# base and copied into the shared input slots only right before its block, and writes an output slot of
# its own, poisoned before the block; after each ABBA pair every candidate slot is checked against the
# reference's slot for the same inputs. The candidate's process tree is frozen whenever its own calls
# are not running. The same events as engine/runtime/checked_timing.cpp, which the launcher reads for
# both engines.

ROUND_TRIP_SAMPLES = 25           # empty blocks on the trusted worker
TIMING_TRIAL_BASE = 1 << 24       # timed trials start past this, far from any eval trial
SECRET_TRIAL_SPAN = 1 << 39       # PKB seeds 42 + id*1000 + rank + trial*1_000_003: within int64
POISON_BYTE = 0xFF                # NaN in every float dtype, -1 in every signed integer
PERTURB_LIMIT = 16                # perturbations are integers in [0, 16): exact in bf16, and in sums


class CheckedTiming:
    """pkbw's timed blocks for the sides present (engine/runtime/checked_timing.cpp): a `timing_plan`
    event, a `perf_result` per block and a `timed_check` per candidate block."""

    def __init__(self, perf, sides, draw, first_output):
        self.p, self.s, self.o = perf, perf.s, perf.o
        self.torch, self.device = self.s.torch, self.s.device
        self.reference = next((side for side in sides if not side.untrusted), None)
        self.candidate = next((side for side in sides if side.untrusted), None)
        self.draw, self.first_output = draw, first_output
        self.pairs = max(int(self.o.get("pairs", PERF_PAIRS)), 1)
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
        self.cold = self.o.get("rotation", PERF_ROTATION) == "copies"
        budget = HOST_MEMORY_BUDGET if not s.cuda else \
            int(float(self.o.get("rotation_memory_fraction", PERF_ROTATION_MEMORY_FRACTION)) * s.total_memory)
        iterations = int(self.o.get("iterations", PERF_ITERATIONS))
        calls, self.reason = plan_calls(self.input_bytes, self.slot_bytes, budget, iterations, self.pairs)
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
        floating = any(dtype_named(spec["dtype"], torch).is_floating_point for spec in self.specs)
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
                slot_view(raw, 0, spec, self.torch).copy_(tensor)

    def repeats(self):
        """Whether sets 0 and 1 are byte for byte the same (their trees already are)."""
        return bool(self.torch.equal(self.set_bytes_of(0), self.set_bytes_of(1)))

    def perturb(self, index):
        if not self.perturbed:
            return
        torch = self.torch
        raw = self.set_bytes_of(index)
        for number, spec in enumerate(self.specs):
            view = slot_view(raw, 0, spec, torch)
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
        warmup = int(self.o.get("warmup", PERF_WARMUP))
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
        dtype = dtype_named(leaf["dtype"], torch)
        size = item_size(dtype, torch)
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
                ref_value = decode_value(ref_node, self.torch, no_tensor)
                cand_value = decode_value(cand_node, self.torch, no_tensor)
            except ProtocolError as error:
                return f"{leaf['path']}: its value cannot be read ({error})"
            found = pkb_mismatch(ref_value, cand_value, self.s.atol, self.s.rtol, self.torch, leaf["path"])
            if found:
                return found
        return None

    def check_pair(self, candidate_block, ref_reply, cand_reply):
        s = self.s
        status, failed, message = STATUS_PASS, 0, ""
        if self.unchecked_reason:
            return  # nothing to check against: the plan said so (checked false, and why)
        if not any(not leaf.get("value") for leaf in self.leaves):
            status, message = STATUS_UNCHECKED, "the problem has no tensor output to check"
        elif ref_reply["failed"] or ref_reply["failed_count"]:
            k, why = next(iter(sorted(ref_reply["failed"].items())), (0, "?"))
            status, message = STATUS_UNCHECKED, (f"the reference's outputs do not keep trial 0's structure (call {k}: "
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
                status = STATUS_MISMATCH
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
