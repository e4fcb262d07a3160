"""PKB's Python judge: the steps that bring one rank to its first trial (RankStartup, the base of
pkbw_pkb_rank.RankJudge): setup, the workers' start, torch and the device, the rendezvous, the workers'
groups and the loads; and the report of a failed request to the candidate's process, which any step
may make.
"""

import json
import os
import socket
import sys
import traceback

import pkbw_sandbox
from pkbw_channel import ProtocolError, close_fds
from pkbw_pkb_contract import (
    Events, EXIT_ENVIRONMENT, EXIT_SOLUTION_BROKE, KIND_CUDA_ERROR, KIND_ENVIRONMENT, KIND_RENDEZVOUS,
    KIND_SOLUTION_ERROR, LAYOUT_RANK_EVENTS, PHASE_COMPILE, PHASE_RENDEZVOUS, PHASE_START, STATUS_CRASH,
    STATUS_ERROR, STATUS_INVALID_OUTPUT
)
from pkbw_pkb_solution import load_module
from pkbw_pkb_worker import (
    _libc, Candidate, candidate_environment, CANDIDATE_PORT_KEY, CANDIDATE_SCRIPT, candidate_wrapper, CandidateGone,
    CandidateRaised, ConfigError, INPUT_GROUPS, PR_SET_CHILD_SUBREAPER, PR_SET_DUMPABLE, REFERENCE_PORT_KEY,
    worker_sandbox
)
from pkbw_process_group import init_default_group
from pkbw_tensor_transport import CudaIpc


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


def keep_out_of_reach():
    """Non-dumpable: processes of the same user without CAP_SYS_PTRACE can no longer open
    /proc/<judge>/fd/* (the control pipe), read /proc/<judge>/mem or environ, or ptrace the judge. Root
    keeps all of these; that is for the wrapper (a sandbox) to take away. PKBW_PKB_JUDGE_DUMPABLE=1
    leaves the judge as it was (for a debugger, or if a library needs to ptrace-access its peers)."""
    if os.environ.get("PKBW_PKB_JUDGE_DUMPABLE") != "1":
        _libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    _libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)  # the candidate's orphans come back here


class RankStartup:
    """One rank's judge up to its first trial, the base of RankJudge (whose docstring tells the steps and
    the state they share): the setup (__init__) and the steps RankJudge.run takes before the trials. A
    step that can end the rank returns its exit code (EXIT_*), and nothing when the run goes on; the
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
        self.ipc = None  # CudaIpc, shared by the workers on a GPU
        self.trials_run = 0
        self.first_output = None  # trial 0's output (the reference's where it runs): the timed calls' slots

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
            init_default_group(dist, store, rank, world, self.device if self.cuda else None)
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
                    self.ipc = CudaIpc()
                    self.ipc.require_context()
                worker.ipc = self.ipc
                if key in self.init_sent:
                    raise self.init_sent[key]
                _, fds = worker.reply()
                close_fds(fds)
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
            self.reference_solution = load_module("pkbw_pkb_reference", pkb["reference_file"]).solution
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
                close_fds(fds)
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
            close_fds(fds)
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
