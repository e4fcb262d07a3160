"""The sandbox of PKB's Python workers (the candidate's process and the reference's timing worker): the one
pkbw's native candidates run in (docs/engine.md, "The sandbox"), applied by pkbw-sandbox
(engine/sandbox/main.cpp), through which the judge starts each worker.

What a worker may read, besides what every sandboxed process of pkbw's may (the system's libraries and
configuration, /proc, /sys, device nodes): this Python's installation and the folders on its module path
(the checkout, pkbw's Python programs, site-packages), the solution's folder, and the headers and tools
its torch extensions compile with (the compilers' and CUDA's installations too where they live outside
the system's folders, such as a compiler under /opt). What it may write: its own directory (its HOME
and TMPDIR), its torch extensions folder (one per solution file and rank, so a candidate can spoil no
other's build) and /dev/shm; with $PKBW_SANDBOX_WRITABLE (a colon-separated list, for tests and debugging) those folders
too, which the run's sandbox line then names. The user's other files (the store, the compile cache, the
run directories, other solutions) are neither readable nor writable.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

from pkbw_pkb_contract import ENV_SANDBOX

# Read and execute, for compiling torch extensions (headers, nvcc's and the compilers' own files) and
# for what Python's packages look up in shared data (zoneinfo, locales).
BUILD_READS = ("/usr/include", "/usr/local/include", "/usr/share", "/usr/local/bin", "/usr/local/share")


class SandboxError(Exception):
    """pkbw-sandbox could not be asked what it enforces (an environment error of the judge's)."""


class WorkerSandbox:
    """One worker's sandbox: `prefix` (the argv it is started through, empty when none), `environment`
    (what its environment gains: HOME, TMPDIR, cache folders), `description` and `landlock_abi` (the run's
    candidate event), and its own directory, removed by close()."""

    def __init__(self, prefix, environment, description, landlock_abi, directory=None):
        self.prefix = prefix
        self.environment = environment
        self.description = description
        self.landlock_abi = landlock_abi
        self.directory = directory

    def close(self):
        if self.directory:
            shutil.rmtree(self.directory, ignore_errors=True)
            self.directory = None


def inside(path, folder):
    return os.path.commonpath([os.path.abspath(path), os.path.abspath(folder)]) == os.path.abspath(folder)


def module_reads(solution_file, private=()):
    """The folders a worker reads its Python, its modules and the solution from; none that holds one of
    `private` (the run's folder, pkbw's cache: a module path such as $HOME in PYTHONPATH would open
    them all)."""
    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, os.path.dirname(os.path.realpath(sys.executable))}
    paths.update(os.path.abspath(p) for p in sys.path if p and os.path.isdir(p))
    if solution_file:
        paths.add(os.path.dirname(os.path.abspath(solution_file)))
    paths = {p for p in paths if os.path.isdir(p) and not any(inside(q, p) for q in private if q)}
    # The file itself in any case (a folder such as $HOME that holds pkbw's cache is not opened for it).
    files = [os.path.abspath(solution_file)] if solution_file and os.path.isfile(solution_file) else []
    return sorted(paths) + files + [p for p in BUILD_READS if os.path.isdir(p)]


# The compilers a torch extension's build runs (torch reads CXX, nvcc's host compiler comes from CC or
# CUDAHOSTCXX) and the CUDA toolkit it finds through CUDA_HOME: where these live outside the system's
# folders (a compiler installed under /opt, say), their installation is readable too.
TOOLCHAIN_VARIABLES = ("CXX", "CC", "CUDAHOSTCXX", "NVCC_CCBIN")
TOOLCHAIN_PROGRAMS = ("c++", "g++", "gcc", "cc", "nvcc", "ninja")
# Prefixes whose compilers the base sandbox already lets run (/usr/bin, /usr/lib, /usr/libexec, ...):
# opening them whole would open more than the compiler.
SYSTEM_PREFIXES = ("", "/", "/usr", "/usr/local")


def toolchain_reads(private=()):
    """The installation folders of the compilers and CUDA toolkit a torch extension builds with: for a
    program, the folder above its bin/ (its libexec/, lib/ and include/ are where the compiler runs
    from); none that holds one of `private`, and never the root."""
    programs = [os.environ.get(name, "").split(" ")[0] for name in TOOLCHAIN_VARIABLES]
    paths = set()
    for program in [p for p in programs if p] + list(TOOLCHAIN_PROGRAMS):
        found = shutil.which(program)
        for path in {found, found and os.path.realpath(found)} - {None}:
            folder = os.path.dirname(path)
            paths.add(os.path.dirname(folder) if os.path.basename(folder) == "bin" else folder)
    for name in ("CUDA_HOME", "CUDA_PATH"):
        if os.path.isdir(os.environ.get(name, "")):
            paths.add(os.path.realpath(os.environ[name]))
    return sorted(p for p in paths if p not in SYSTEM_PREFIXES and os.path.isdir(p)
                  and not any(inside(q, p) for q in private if q))


def extra_writable():
    """$PKBW_SANDBOX_WRITABLE's folders (absolute, existing)."""
    text = os.environ.get("PKBW_SANDBOX_WRITABLE", "")
    return [p for p in text.split(":") if p and os.path.isabs(p) and os.path.isdir(p)]


def describe(program, arguments):
    """(landlock_abi, description) of the sandbox these arguments make, from pkbw-sandbox itself."""
    try:
        done = subprocess.run([program, "--describe"] + arguments + ["--"], capture_output=True, text=True,
                              timeout=30, stdin=subprocess.DEVNULL)
        reply = json.loads(done.stdout.strip().splitlines()[-1]) if done.returncode == 0 else None
    except (OSError, subprocess.TimeoutExpired, ValueError, IndexError) as error:
        raise SandboxError(f"cannot run {program} --describe: {error}") from None
    if not isinstance(reply, dict):
        raise SandboxError(f"{program} --describe exited with code {done.returncode}: {done.stderr.strip()[:500]}")
    return int(reply.get("landlock_abi", 0)), str(reply.get("sandbox", ""))


def worker_sandbox(pkb, extensions_folder, solution_file, run_folder=None):
    """The sandbox a worker of this judge starts in: pkbw-sandbox with this worker's paths; none where
    PKBW_SANDBOX=off or the launcher found no pkbw-sandbox (the run then says so). `extensions_folder`
    (may be None) must exist: Landlock's rules name existing folders. `run_folder`: the run's output
    folder, which no readable folder may hold."""
    program = pkb.get("sandbox_program")
    if os.environ.get(ENV_SANDBOX) == "off":
        return WorkerSandbox([], {}, "no sandbox (PKBW_SANDBOX=off): the candidate can read and write "
                             "whatever this user can", 0)
    if not program or not os.access(program, os.X_OK):
        return WorkerSandbox([], {}, "no sandbox (pkbw-sandbox was not found beside pkbw): the candidate "
                             "can read and write whatever this user can", 0)
    directory = tempfile.mkdtemp(prefix=f"pkbw-candidate-{os.getpid()}-")
    writes = [directory] + ([extensions_folder] if extensions_folder else []) + extra_writable()
    arguments = []
    private = [run_folder, pkb.get("extensions_dir") and os.path.dirname(os.path.dirname(pkb["extensions_dir"]))]
    for path in module_reads(solution_file, private) + toolchain_reads(private):
        arguments += ["--read", path]
    for path in writes:
        arguments += ["--write", path]
    try:
        abi, description = describe(program, arguments)
    except SandboxError:
        shutil.rmtree(directory, ignore_errors=True)
        raise
    environment = {"HOME": directory, "TMPDIR": directory}
    if extensions_folder:
        # Triton's compiled kernels beside torch's extensions: kept across runs of this solution only.
        environment["TRITON_CACHE_DIR"] = os.path.join(extensions_folder, "triton")
    return WorkerSandbox([program] + arguments + ["--"], environment, description, abi, directory)
