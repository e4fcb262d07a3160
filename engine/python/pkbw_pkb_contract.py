"""The run contract as PKB's Python judge speaks it (pkbw_pkb_rank.py and its modules): the words and
codes of core/include/pkbw/core/status.h, the run folder's patterns of core/include/pkbw/core/run_layout.h,
and the control pipe the events travel on. tests/engine/test_pkb_contract_words.py fails when a value here
drifts from core's, or when a judge module sends a word as a literal.
"""

import json
import os

# The run contract's words as core/include/pkbw/core/status.h defines them (rank exit codes, rank_result
# statuses, error kinds, phases): this judge speaks to the same launcher as pkbw-rank, and
# tests/engine/test_pkb_contract_words.py fails when a value here, or a word a judge module uses, drifts
# from core.
EXIT_OK, EXIT_ENVIRONMENT, EXIT_SOLUTION_BROKE, EXIT_INTERNAL = 0, 3, 4, 5
STATUS_PASS, STATUS_MISMATCH, STATUS_INVALID_OUTPUT = "pass", "mismatch", "invalid_output"
STATUS_ERROR, STATUS_CRASH = "error", "crash"
STATUS_UNCHECKED = "unchecked"  # a timed_check's: the block's timed calls were not compared
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
# The rank environment's variables this judge reads (core/include/pkbw/core/rank_environment.h:
# ENV_CONTROL_FD <-> kEnvControlFd).
ENV_CONTROL_FD, ENV_SANDBOX, ENV_CONTAINMENT = "PKBW_CONTROL_FD", "PKBW_SANDBOX", "PKBW_CONTAINMENT"
# The perf options' defaults, where the configuration's "perf" object leaves a field out
# (core/include/pkbw/core/perf_defaults.h: PERF_PAIRS <-> kPerfPairs).
PERF_PKB, PERF_PKB_WARMUP, PERF_PKB_ITERATIONS = True, 500, 100
PERF_PKBW, PERF_WARMUP, PERF_PAIRS, PERF_ITERATIONS = True, 50, 5, 50
PERF_ROTATION, PERF_ROTATION_MEMORY_FRACTION = "copies", 0.25


class Events:
    """The control pipe: one JSON object per line (core/protocol.h is the reader)."""

    def __init__(self, rank, fallback_path):
        fd = os.environ.get(ENV_CONTROL_FD, "")
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

