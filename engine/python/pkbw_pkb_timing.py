"""PKB's Python judge: timing (docs/pkb-interop.md, "Timing"). The judge measures, the workers only
compute: the perf phase (Perf) runs PKB's protocol in each side's worker, then pkbw's checked blocks
(pkbw_pkb_checked_timing.py, and engine/runtime/checked_timing.cpp, its C++ counterpart). Each side's
worker as the timing sees it is pkbw_pkb_timed_sides.py's; the memory of the timed calls
pkbw_pkb_timing_slots.py's.
"""

from pkbw_channel import ProtocolError
from pkbw_pkb_checked_timing import CheckedTiming
from pkbw_pkb_contract import PERF_PAIRS, PERF_PKB, PERF_PKB_ITERATIONS, PERF_PKB_WARMUP, PERF_PKBW
from pkbw_pkb_timed_loops import pkb_plan
from pkbw_pkb_timed_sides import Stillness, finite


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
        pairs = max(int(self.o.get("pairs", PERF_PAIRS)), 1)
        self.blocks = (sides if self.o.get("pkb", PERF_PKB) else 0) + \
            ((pairs if sides == 1 else 2 * pairs) if self.o.get("pkbw", PERF_PKBW) and sides else 0)

    def progress(self, protocol, side):
        self.timed += 1
        self.s.events.send("perf_progress", block=self.timed, blocks=self.blocks, protocol=protocol, side=side)

    def pkb(self, sides, args):
        """PKB's protocol (utils/performance.py) on the eval's inputs of trial 0, each side in its worker;
        the candidate frozen while the reference's series runs."""
        s, o = self.s, self.o
        _, groups, size = pkb_plan(args, s.l2_bytes, s.torch)
        candidate = next((side for side in sides if side.untrusted), None)
        for side in sides:
            s.barrier()
            with Stillness(None if side.untrusted else candidate):
                side.send_inputs("pkb_warmup", args, {"groups": groups, "warmup": int(o.get("pkb_warmup", PERF_PKB_WARMUP))})
                reply = side.request({"op": "pkb_timed", "iterations": int(o.get("pkb_iterations", PERF_PKB_ITERATIONS))})
            samples = reply.get("samples_ms")
            if not isinstance(samples, list) or not all(finite(x) for x in samples) or not finite(reply.get("span_ms")):
                side.fail(ProtocolError("a PKB series' reply without finite samples"))
            s.events.send("perf_result", protocol="pkb", side=side.name, block=0, samples_ms=[float(x) for x in samples],
                          span_ms=float(reply["span_ms"]), calls=len(samples), num_input_groups=groups,
                          l2_cache_size_bytes=s.l2_bytes, timed_tensor_bytes=size)
            self.progress("pkb", side.name)

    def pkbw(self, sides, draw, first_output):
        CheckedTiming(self, sides, draw, first_output).run()
