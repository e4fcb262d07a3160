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
import os
import subprocess
import sys
import traceback

from pkbw_channel import ProtocolError, close_fds
from pkbw_pkb_contract import (
    EXIT_INTERNAL, EXIT_OK, EXIT_SOLUTION_BROKE, KIND_CUDA_ERROR, KIND_INTERNAL, KIND_NCCL_ERROR,
    KIND_SOLUTION_ERROR, LAYOUT_CANDIDATE_TRACE_DIR, LAYOUT_TORCH_TRACE, LAYOUT_TRACE_DIR, LAYOUT_TRIAL_DIR,
    LAYOUT_TRIAL_OUTPUTS, PERF_PKB, PERF_PKBW, PHASE_CANDIDATE, PHASE_COMPARE, PHASE_COMPILE, PHASE_INPUTS,
    PHASE_PERF, PHASE_REFERENCE, PHASE_TEARDOWN, PHASE_TRACE, STATUS_CRASH, STATUS_ERROR, STATUS_INVALID_OUTPUT,
    STATUS_MISMATCH, STATUS_PASS
)
from pkbw_pkb_outputs import output_leaves, pkb_mismatch, write_safetensors
from pkbw_pkb_rank_resources import Resources, listed_processes
from pkbw_pkb_rank_startup import RankStartup
from pkbw_pkb_solution import error_kind
from pkbw_pkb_timed_loops import TraceUnavailable, profile_iterations
from pkbw_pkb_timed_sides import TimedSide, TimingWorkerFailed
from pkbw_pkb_timing import Perf
from pkbw_pkb_worker import (
    CANDIDATE_EXIT_S, CANDIDATE_LEAVE_S, CandidateGone, CandidateRaised, INPUT_GROUPS, InputsCannotCross,
    read_candidate_trace, write_beside_candidate
)


class SolutionFailed(Exception):
    pass


class InvalidOutput:
    """A trial's candidate output that its process could not describe to the judge (the reason)."""

    def __init__(self, message):
        self.message = message


class RankJudge(RankStartup):
    """One rank's judge, a method per step in the order run() takes them, as pkbw-rank's are split
    (engine/runtime/rank_runner.cpp, rank_trial.cpp): setup, the workers' start, torch and the device,
    the rendezvous, the workers' groups, the loads, the trials (inputs, candidate, reference, compare,
    report), the traced pass, perf, the teardown. The state the steps share is this object's, set by the
    step that makes it; Perf and CheckedTiming read it as their rank state (events, rank, cuda, torch,
    device, l2_bytes, total_memory, barrier, dist, ipc, atol, rtol, problem_id, shape, dtype).

    A step that can end the rank returns its exit code (EXIT_*), and nothing when the run goes on; the
    events it sent are the launcher's account of why. The setup and the steps up to the first trial are
    RankStartup's (pkbw_pkb_rank_startup.py); the trials and what follows them are here."""

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
        phase = PHASE_COMPILE if first else PHASE_CANDIDATE
        events.phase(phase, trial)
        # Inputs that fill much of the device wait in host memory during the call (pkbw_input_parking.py),
        # the copies in the inputs phase; they are back, as they were, before the reference runs.
        parking = (lambda: events.phase(PHASE_INPUTS, trial), lambda: events.phase(phase, trial))
        try:
            reply, fds = self.candidate.send_inputs("call", x, {"trial": trial}, park=parking)
            output = self.candidate.take_outputs(reply, fds)
        except CandidateRaised as error:
            if error.kind != "invalid_output":
                self.candidate_failed(PHASE_CANDIDATE, trial, error, f"trial {trial}")
                self.take_back_inputs(trial, report=False)
                raise SolutionFailed() from error
            # The solution returned; only its value cannot be described. A verdict, like a mismatch:
            # this rank still takes part in the reference's collectives and the stop.
            output = InvalidOutput(error.message)
        except (CandidateGone, ProtocolError) as error:
            self.candidate_failed(PHASE_CANDIDATE, trial, error, f"trial {trial}")
            self.take_back_inputs(trial, report=False)
            raise SolutionFailed() from error
        self.take_back_inputs(trial, report=True)
        return output

    def take_back_inputs(self, trial, report):
        """The judge's parked inputs back on the device (a no-op when none were parked). Where they cannot
        come back the device is full of what the candidate's process still holds after its call, which PKB's
        one process would not have: the candidate's failure, reported as such when `report` (otherwise
        the trial has already failed)."""
        if self.candidate.parked is None:
            return
        self.events.phase(PHASE_INPUTS, trial)
        problem = self.candidate.restore_inputs()
        if problem and report:
            self.events.error(PHASE_INPUTS, KIND_SOLUTION_ERROR, f"rank {self.rank}, trial {trial}: {problem}")
            self.events.send("rank_result", trial=trial, status=STATUS_ERROR, message=problem[:4000], tensors=[],
                             guard_violations=[], mutated_inputs=[], outputs={})
            raise SolutionFailed()

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
            kind = error_kind(error)
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
        (pkbw_pkb_timed_loops.profile_iterations), the reference here, the candidate in its process. A
        profiler that cannot record is said on stderr and costs only the trace; a side that raises fails
        the run."""
        events, rank = self.events, self.rank
        events.phase(PHASE_TRACE, 0)
        folder = str(trace.get("dir", os.path.join(self.out_dir, LAYOUT_TRACE_DIR)))
        iterations = int(trace.get("iterations", 10))
        os.makedirs(os.path.join(folder, LAYOUT_CANDIDATE_TRACE_DIR), exist_ok=True)
        if self.run_reference:
            try:
                profile_iterations(self.torch, self.cuda, self.dist.barrier, self.reference_solution, x, iterations,
                                   os.path.join(folder, LAYOUT_TORCH_TRACE.format(rank=rank, side="reference")))
            except TraceUnavailable as error:
                print(f"pkbw_pkb_rank: rank {rank}: no reference trace: {error}", file=sys.stderr)
            except Exception as error:  # noqa: BLE001
                events.error(PHASE_TRACE, error_kind(error),
                             f"the reference raised on rank {rank} in the traced pass:\n{traceback.format_exc()}")
                return EXIT_SOLUTION_BROKE
        if self.run_candidate:
            same = lambda: None  # noqa: E731 - the trace phase covers the parking's copies too
            try:
                reply, fds = self.candidate.send_inputs("trace", x, {"iterations": iterations}, park=(same, same))
            except (CandidateRaised, CandidateGone, ProtocolError) as error:
                self.candidate_failed(PHASE_TRACE, None, error, "the traced pass")
                return EXIT_SOLUTION_BROKE
            finally:
                self.candidate.restore_inputs()  # the pass is the run's last use of x: a failure costs nothing
            try:
                self.keep_candidate_trace(folder, reply, fds)
            finally:
                close_fds(fds)
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
            if perf.o.get("pkb", PERF_PKB):
                perf.pkb(sides, self.inputs(0))
            if perf.o.get("pkbw", PERF_PKBW) and sides:
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
