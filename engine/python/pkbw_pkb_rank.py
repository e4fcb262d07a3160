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
import json
import os
import signal
import socket
import subprocess
import sys
import time
import traceback

import pkbw_containment as containment
import pkbw_sandbox
import pkbw_pkb_candidate as channel
from pkbw_pkb_candidate import ProtocolError
from pkbw_pkb_contract import (
    Events, EXIT_ENVIRONMENT, EXIT_INTERNAL, EXIT_OK, EXIT_SOLUTION_BROKE, KIND_CUDA_ERROR, KIND_ENVIRONMENT,
    KIND_INTERNAL, KIND_NCCL_ERROR, KIND_RENDEZVOUS, KIND_SOLUTION_ERROR, LAYOUT_CANDIDATE_TRACE_DIR,
    LAYOUT_RANK_EVENTS, LAYOUT_TORCH_TRACE, LAYOUT_TRACE_DIR, LAYOUT_TRIAL_DIR, LAYOUT_TRIAL_OUTPUTS,
    PHASE_CANDIDATE, PHASE_COMPARE, PHASE_COMPILE, PHASE_INPUTS, PHASE_PERF, PHASE_REFERENCE,
    PHASE_RENDEZVOUS, PHASE_START, PHASE_TEARDOWN, PHASE_TRACE, STATUS_CRASH, STATUS_ERROR, STATUS_INVALID_OUTPUT, STATUS_MISMATCH, STATUS_PASS
)
from pkbw_pkb_outputs import (
    output_leaves, pkb_mismatch, write_safetensors
)
from pkbw_pkb_worker import (
    _libc, Candidate, candidate_environment, CANDIDATE_EXIT_S, CANDIDATE_LEAVE_S, CANDIDATE_PORT_KEY,
    CANDIDATE_SCRIPT, candidate_wrapper, CandidateGone, CandidateRaised, ConfigError, INPUT_GROUPS,
    InputsCannotCross, PR_SET_CHILD_SUBREAPER, PR_SET_DUMPABLE, read_candidate_trace, REFERENCE_PORT_KEY,
    worker_sandbox, write_beside_candidate
)
from pkbw_pkb_timing import (
    Perf, TimedSide, TimingWorkerFailed
)


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
