#!/usr/bin/env python3
"""Cross-checks pkbw's references against PKB's own PyTorch references on the same inputs.

Two modes (docs/problems.md, "Cross-checking against PKB"):

  table: the whole loop for a list of problems, world sizes and dtypes. For each combination it runs
  `pkbw dryrun --solution reference --keep-inputs --keep-outputs` (host oracle with --backend host,
  CUDA reference with --backend cuda), then starts one rank process per rank of this script's rank
  mode on that run, and prints per combination W, the max abs error and PKB's verdict:

    tools/pkb_crosscheck.py table --pkbw build/bin/pkbw --pkb-checkout PKB_DIR \\
        [--problems 1-20] [--worlds 2,4] [--dtypes bf16,f32] [--m 256 --n 256] [--backend host|cuda]

  rank (the default; one process per rank, under torchrun or started by `table`): loads this rank's
  pkbw inputs (outputs/trial_K/rank_R_inputs.safetensors), calls PKB's reference/<stem>.py
  `solution()` with them under torch.distributed, and compares the result with pkbw's reference
  output of that rank using PKB's rule (torch.allclose(pkb.float(), pkbw.float(), atol, rtol)):

    torchrun --nproc-per-node W tools/pkb_crosscheck.py --pkb-checkout PKB_DIR --run-dir RUN_DIR \\
        [--m M --n N --dtype D] [--trial K] [--backend auto|nccl|gloo]

The backend is NCCL on GPUs, gloo on the CPU (tensors on the CPU, tools/pkbxc/emulation.py installed
for what gloo and torch 1.13 lack). PKB's arguments come from tools/pkbxc/adapters.py. Inputs are
read with tools/pkbxc/safetensors_lite.py (no `safetensors` package needed). PKB's code is read from
the checkout given; nothing of it is copied into pkbw.
"""
import argparse
import concurrent.futures
import datetime
import importlib.util
import json
import os
import re
import shutil
import socket
import shlex
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
RANK_TAG = "PKBW_CROSSCHECK_RANK:"
SUMMARY_TAG = "PKBW_CROSSCHECK_JSON:"
DTYPES = {"bf16": "bfloat16", "bfloat16": "bfloat16", "f32": "float32", "float32": "float32",
          "f16": "float16", "float16": "float16", "f64": "float64", "float64": "float64"}


# ------------------------------------------------------------------------------------------------
# rank mode
# ------------------------------------------------------------------------------------------------

def load_module(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def flatten(value, name="output", values=None):
    """PKB's outputs as pkbw names them (docs/formats.md "Output names"): a tensor -> output, a tuple
    -> output_i, nested lists -> output_i[j], dict keys -> key (nested: name.key). Non-tensor leaves
    (None, torch.Size, numbers, strings) go into `values` as JSON values, as pkbw's "pkbw.values"."""
    import torch
    if isinstance(value, torch.Tensor):
        return {name: value}
    if isinstance(value, (list, tuple)) and not isinstance(value, torch.Size):
        leaves = {}
        for i, item in enumerate(value):
            leaves.update(flatten(item, f"output_{i}" if name == "output" else f"{name}[{i}]", values))
        return leaves
    if isinstance(value, dict):
        leaves = {}
        for key, item in value.items():
            leaves.update(flatten(item, str(key) if name == "output" else f"{name}.{key}", values))
        return leaves
    if values is not None:
        values[name] = list(value) if isinstance(value, torch.Size) else value
    return {}


def as_float(tensor, dtype_name):
    from pkbxc import safetensors_lite
    if dtype_name in safetensors_lite.FLOAT8 and tensor.dtype == __import__("torch").uint8:
        return safetensors_lite.decode_float8(tensor, dtype_name)
    if tensor.is_complex():
        return tensor
    return tensor.float()


def tie_note(name, bad, tie_rows):
    """Which rows (indices along dim 0) of output `name` hold a mismatched element, against the tie rows
    pkbw's judge named for it (the inputs file's "pkbw.tie_rows"): a mismatch confined to tie rows is a
    top-k tie the two sides broke differently (docs/comparison.md)."""
    rows = [0] if bad.dim() == 0 else bad.reshape(bad.shape[0], -1).any(dim=1).nonzero().flatten().tolist()
    shown = ", ".join(str(r) for r in rows[:8]) + (", ..." if len(rows) > 8 else "")
    named = tie_rows.get(name)
    if not named:
        return f"mismatched rows {shown}"
    ties = set(named.get("rows", []))
    outside = [r for r in rows if r not in ties]
    if not outside:
        return f"tie-explained: mismatched rows {shown} are all tie rows ({named.get('rule', '')})"
    return f"mismatched rows {shown}: {len(outside)} outside the {len(ties)} tie rows"


def compare(pkb, pkbw, pkbw_dtypes, atol, rtol, tie_rows=None):
    import torch
    tie_rows = tie_rows or {}
    report = {"ok": True, "max_abs_error": 0.0, "detail": []}
    if set(pkb) != set(pkbw):
        report["ok"] = False
        report["detail"].append(f"names differ: pkb {sorted(pkb)} pkbw {sorted(pkbw)}")
    for name in sorted(set(pkb) & set(pkbw)):
        a = as_float(pkb[name].detach().cpu(), "")
        b = as_float(pkbw[name].cpu(), pkbw_dtypes.get(name, ""))
        if a.shape != b.shape:
            report["ok"] = False
            report["detail"].append(f"{name}: shape pkb {list(a.shape)} vs pkbw {list(b.shape)}")
            continue
        error = (a - b).abs().max().item() if a.numel() else 0.0
        if error == error:  # NaN-free
            report["max_abs_error"] = max(report["max_abs_error"], error)
        if not torch.allclose(a, b, atol=atol, rtol=rtol):
            report["ok"] = False
            bad = ~torch.isclose(a, b, atol=atol, rtol=rtol)
            report["detail"].append(f"{name}: not allclose ({bad.sum().item()} of {a.numel()}), max abs error "
                                    f"{error:.3g}; {tie_note(name, bad, tie_rows)}")
    return report


def rank_main(args):
    import torch
    import torch.distributed as dist
    sys.path.insert(0, HERE)
    from pkbxc import adapters, emulation, safetensors_lite

    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local_rank = int(os.environ.get("LOCAL_RANK", rank))
    backend = args.backend
    if backend == "auto":
        backend = "nccl" if torch.cuda.is_available() else "gloo"
    timeout = datetime.timedelta(seconds=args.collective_timeout)
    if backend == "nccl":
        torch.cuda.set_device(local_rank)
        device = torch.device("cuda", local_rank)
        # PKBXC_CUBLAS_REDUCED_PRECISION=off: PKB's bf16/fp16 GEMMs without cuBLAS's reduced-precision
        # (split-K) reductions, which torch allows by default and pkbw's references never use; running
        # a problem both ways shows whether a W=1 disagreement is that (docs/problems.md).
        if os.environ.get("PKBXC_CUBLAS_REDUCED_PRECISION", "on") == "off":
            torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False
            torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
        try:
            dist.init_process_group("nccl", device_id=device, timeout=timeout)
        except TypeError:  # torch without device_id
            dist.init_process_group("nccl", timeout=timeout)
    else:
        device = torch.device("cpu")
        torch.set_num_threads(1)
        dist.init_process_group("gloo", timeout=timeout)

    report = {"rank": rank, "status": "error", "max_abs_error": None, "detail": []}
    stem = "?"
    if args.pkb_only is not None:
        return pkb_only(args, rank, world, device, backend, dist)
    try:
        trial_dir = os.path.join(args.run_dir, "outputs", f"trial_{args.trial}")
        loaded, meta, _ = safetensors_lite.load(os.path.join(trial_dir, f"rank_{rank}_inputs.safetensors"), device)
        stem = meta["pkbw.problem"]
        order = [name for name in meta.get("pkbw.input_order", "").split(",") if name]
        params = json.loads(meta.get("pkbw.params", "{}"))
        problem_id = int(stem.split("_")[0])
        adapter = adapters.adapter_for(problem_id)
        missing = [name for name in adapter.requires if not hasattr(torch, name)]
        if backend == "gloo" and (adapter.cpu_blocker or missing):
            report.update(status="cannot_run", detail=[adapter.cpu_blocker or
                                                       f"torch {torch.__version__} lacks torch.{', torch.'.join(missing)}"])
            return finish(report, stem, world, args, dist)
        if backend == "gloo":
            emulation.install()
            emulation.TRITON_STAND_INS.update(adapter.triton)
        reference = os.path.join(args.pkb_checkout, "reference", stem + ".py")
        if not os.path.exists(reference):
            raise RuntimeError(f"{reference} does not exist (wrong --pkb-checkout, or PKB numbers it differently)")
        module = load_module(reference, f"pkb_reference_{problem_id}")
        pkb_inputs = load_module(os.path.join(args.pkb_checkout, "utils", "input_output_tensors.py"),
                                 "pkb_input_output_tensors").create_input_tensor
        tensors = [loaded[name] for name in order]
        dtype_name = args.dtype or next((str(t.dtype)[6:] for t in tensors if t.is_floating_point()), "bfloat16")
        call = adapters.Call(problem_id=problem_id, stem=stem, rank=rank, world=world, trial=args.trial,
                             m=args.m, n=args.n, dtype=getattr(torch, DTYPES.get(dtype_name, dtype_name)),
                             device=device, tensors=tensors, names=order, params=params,
                             solution=module.solution, pkb_inputs=pkb_inputs)
        if backend == "gloo" and adapter.patch:
            adapter.patch(module, call)
        call_args, call_kwargs = (adapter.build or adapters.pkb_tuple)(call)
        result = module.solution(*call_args, **call_kwargs)
        if backend == "nccl":
            torch.cuda.synchronize()
        pkbw, pkbw_meta, pkbw_dtypes = safetensors_lite.load(
            os.path.join(trial_dir, f"rank_{rank}_reference.safetensors"))
        pkb_values = {}
        outcome = compare(flatten(result, values=pkb_values), pkbw, pkbw_dtypes, args.atol, args.rtol,
                          json.loads(meta.get("pkbw.tie_rows", "{}")))
        pkbw_values = json.loads(pkbw_meta.get("pkbw.values", "{}"))
        if pkb_values != pkbw_values:  # non-tensor leaves (None, torch.Size, numbers) must be equal
            outcome["ok"] = False
            outcome["detail"].append(f"non-tensor leaves differ: pkb {json.dumps(pkb_values)[:150]} "
                                     f"pkbw {json.dumps(pkbw_values)[:150]}")
        report.update(status="match" if outcome["ok"] else "mismatch", max_abs_error=outcome["max_abs_error"],
                      detail=[f"rank {rank}: {d}" for d in outcome["detail"]] + call.notes +
                      ([adapter.note] if adapter.note else []))
    except Exception as error:  # reported per rank; the driver's deadline ends ranks left waiting
        report["detail"].append(f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"[:400])
        print(RANK_TAG + json.dumps(dict(report, problem=stem)), flush=True)
        os._exit(1)
    return finish(report, stem, world, args, dist)


def pkb_stem(checkout, problem_id):
    for name in os.listdir(os.path.join(checkout, "reference")):
        if re.match(rf"^{problem_id}_.*\.py$", name):
            return name[:-3]
    return None


def pkb_only(args, rank, world, device, backend, dist):
    """PKB's reference on PKB's own inputs (create_input_tensor), no pkbw: shows whether it runs here
    (with the emulation layer on gloo) and the output leaves a pkbw descriptor must produce."""
    import torch
    from pkbxc import adapters, emulation
    problem_id = args.pkb_only
    stem = pkb_stem(args.pkb_checkout, problem_id) or f"{problem_id}_?"
    report = {"rank": rank, "status": "error", "max_abs_error": None, "detail": []}
    try:
        adapter = adapters.adapter_for(problem_id)
        missing = [name for name in adapter.requires if not hasattr(torch, name)]
        if backend == "gloo" and (adapter.cpu_blocker or missing):
            report.update(status="cannot_run", detail=[adapter.cpu_blocker or
                                                       f"torch {torch.__version__} lacks torch.{', torch.'.join(missing)}"])
            return finish(report, stem, world, args, dist)
        if backend == "gloo":
            emulation.install()
            emulation.TRITON_STAND_INS.update(adapter.triton)
        module = load_module(os.path.join(args.pkb_checkout, "reference", stem + ".py"), f"pkb_reference_{problem_id}")
        create = load_module(os.path.join(args.pkb_checkout, "utils", "input_output_tensors.py"),
                             "pkb_input_output_tensors").create_input_tensor
        dtype = getattr(torch, DTYPES.get(args.dtype or "bf16"))
        pkb_args = create(rank, world, problem_id, (args.m, args.n), dtype, trial=args.trial, device=device)
        pkb_args = pkb_args if isinstance(pkb_args, tuple) else (pkb_args,)
        call = adapters.Call(problem_id=problem_id, stem=stem, rank=rank, world=world, trial=args.trial, m=args.m,
                             n=args.n, dtype=dtype, device=device, tensors=[], names=[], params={},
                             solution=module.solution, pkb_inputs=create)
        if backend == "gloo" and adapter.patch:
            adapter.patch(module, call)
        start = time.monotonic()
        result = module.solution(*pkb_args)
        leaves = flatten(result)
        shown = ", ".join(f"{k} {str(v.dtype)[6:]}{list(v.shape)}" for k, v in list(leaves.items())[:6])
        seconds = time.monotonic() - start
        report.update(status="runs", detail=[f"outputs: {shown}" + (" ..." if len(leaves) > 6 else "")]
                      + ([f"slow: {seconds:.0f} s per call"] if seconds >= 10 else []) + call.notes)
    except Exception as error:
        report["detail"].append(f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"[:400])
        print(RANK_TAG + json.dumps(dict(report, problem=stem)), flush=True)
        os._exit(1)
    return finish(report, stem, world, args, dist)


def finish(report, stem, world, args, dist):
    print(RANK_TAG + json.dumps(dict(report, problem=stem)), flush=True)
    reports = [None] * world
    dist.all_gather_object(reports, report)
    ok = all(r["status"] in ("match", "runs") for r in reports)
    if report["rank"] == 0:
        for r in reports:
            print(f"{stem} W={world} trial {args.trial} rank {r['rank']}: {r['status'].upper()} "
                  f"max_abs_error={r['max_abs_error']} {'; '.join(r['detail'])}")
        errors = [r["max_abs_error"] for r in reports if r["max_abs_error"] is not None]
        print(SUMMARY_TAG + json.dumps({"problem": stem, "world_size": world, "trial": args.trial, "ok": ok,
                                        "status": reports[0]["status"],
                                        "max_abs_error": max(errors) if errors else None}), flush=True)
    dist.barrier()
    dist.destroy_process_group()
    return 0 if ok else 1


# ------------------------------------------------------------------------------------------------
# table mode
# ------------------------------------------------------------------------------------------------

def parse_list(text):
    values = []
    for part in text.split(","):
        if "-" in part:
            low, high = part.split("-")
            values.extend(range(int(low), int(high) + 1))
        elif part:
            values.append(int(part))
    return values


def torch_python(candidate):
    """The first interpreter that imports torch: --python, $PKBW_PYTHON, this one, /usr/bin/python3."""
    for python in [candidate, os.environ.get("PKBW_PYTHON"), sys.executable, "/usr/bin/python3", "python3"]:
        if python and shutil.which(python) and subprocess.run([python, "-c", "import torch"],
                                                              capture_output=True).returncode == 0:
            return python
    sys.exit("pkb_crosscheck: no python with torch found (give --python)")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def json_events(text):
    for line in text.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict):
            yield event


def pkbw_dryrun(options, stem, world, dtype, work):
    argv = [options.pkbw, "dryrun", "--problem", stem, "--solution", "reference", "--backend", options.backend,
            "--nproc", str(world), "--dtype", dtype, "--m", str(options.m), "--n", str(options.n),
            "--keep-inputs", "--keep-outputs", "--json",
            # a store per combination: --jobs runs several pkbw at once, and a new store is created by its first
            "--store", os.path.join(work, f"runs-{stem}-{world}-{dtype}.db")]
    if options.cache_dir:
        argv += ["--cache-dir", options.cache_dir]
    argv += shlex.split(options.pkbw_args)
    run = subprocess.run(argv, capture_output=True, text=True, timeout=options.timeout)
    run_dir, status, message = None, None, run.stderr.strip()[-300:]
    for event in json_events(run.stdout):
        if event.get("event") == "run_started":
            run_dir = event.get("run_dir")
        if event.get("event") == "run_finished":
            status, message = event.get("status"), event.get("message", "")
    return run_dir, status, message


def run_ranks(options, python, run_dir, world, dtype, pkb_only=None):
    """The ranks' results; started again on another port (twice at most) when rank 0's store found its
    port taken: free_port's port is free when asked, and another job's process may bind it before rank 0
    does (59 on the H200, twelve jobs at once: EADDRINUSE)."""
    for attempt in range(3):
        ranks = run_ranks_on(options, python, run_dir, world, dtype, pkb_only, free_port())
        if attempt == 2 or not any("EADDRINUSE" in d or "address already in use" in d
                                   for r in ranks for d in r.get("detail", [])):
            return ranks
    return ranks


def run_ranks_on(options, python, run_dir, world, dtype, pkb_only, port):
    procs = []
    for rank in range(world):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank),
                   LOCAL_WORLD_SIZE=str(world), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                   OMP_NUM_THREADS="1")
        argv = [python, os.path.abspath(__file__), "--pkb-checkout", options.pkb_checkout]
        argv += ["--pkb-only", str(pkb_only)] if pkb_only is not None else ["--run-dir", run_dir]
        argv += ["--m", str(options.m), "--n", str(options.n), "--dtype", dtype, "--backend",
                "gloo" if options.backend == "host" else "nccl", "--atol", str(options.atol),
                "--rtol", str(options.rtol), "--collective-timeout", str(options.timeout)]
        procs.append(subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                      start_new_session=True))
    deadline = time.monotonic() + options.timeout
    outputs = []
    for index, proc in enumerate(procs):
        try:
            out, _ = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            for other in procs:
                if other.poll() is None:
                    os.killpg(other.pid, 9)
            out, _ = proc.communicate()
            out += f"\n(timed out after {options.timeout} s)"
        if index == 0 and "EADDRINUSE" in out:
            # Rank 0's store never listened: the others would wait on (or join) whatever holds the port
            # until the timeout. Ended now, so that run_ranks tries another port at once.
            for other in procs[1:]:
                if other.poll() is None:
                    os.killpg(other.pid, 9)
        outputs.append(out)
    ranks = []
    for out in outputs:
        found = [json.loads(line[len(RANK_TAG):]) for line in out.splitlines() if line.startswith(RANK_TAG)]
        ranks.append(found[0] if found else {"status": "error", "max_abs_error": None,
                                             "detail": [(out.strip().splitlines() or ["no output"])[-1][:300]]})
    return ranks


def verdict(ranks):
    statuses = {r["status"] for r in ranks}
    errors = [r["max_abs_error"] for r in ranks if r.get("max_abs_error") is not None]
    details = sorted({d for r in ranks for d in r.get("detail", []) if d})
    for status in ("error", "cannot_run", "mismatch", "runs"):
        if status in statuses:
            return status, (max(errors) if errors else None), details
    return "match", (max(errors) if errors else None), details


def table_main(argv):
    parser = argparse.ArgumentParser(prog="pkb_crosscheck.py table", description="cross-check problems in a table")
    parser.add_argument("--pkbw", default=os.path.join(ROOT, "build", "bin", "pkbw"))
    parser.add_argument("--pkb-checkout", required=True)
    parser.add_argument("--problems", default="1-20", help="ids: 1-20,22")
    parser.add_argument("--worlds", default="2,4")
    parser.add_argument("--dtypes", default="bf16,f32")
    parser.add_argument("--m", type=int, default=256)
    parser.add_argument("--n", type=int, default=256)
    parser.add_argument("--backend", choices=["host", "cuda"], default="host",
                        help="host: host oracle vs PKB on gloo/CPU; cuda: CUDA reference vs PKB on NCCL")
    parser.add_argument("--python", help="interpreter with torch for the ranks (default: the first that has it)")
    parser.add_argument("--cache-dir")
    parser.add_argument("--pkbw-args", default="",
                        help="more arguments for every pkbw dryrun, e.g. '--memory-limit 0 --timeout-reference 900' "
                             "(the host oracle of a problem at PKB's size can need both)")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per pkbw run and per cross-check")
    parser.add_argument("--atol", type=float, default=1e-2)
    parser.add_argument("--rtol", type=float, default=1e-2)
    parser.add_argument("--json", help="also write the rows as JSON to this file")
    parser.add_argument("--jobs", type=int, default=1, help="combinations run at once (each on its own port)")
    parser.add_argument("--pkb-only", action="store_true",
                        help="no pkbw: only run PKB's references on their own inputs (does it run here?)")
    options = parser.parse_args(argv)
    options.pkb_checkout = os.path.abspath(options.pkb_checkout)
    python = torch_python(options.python)
    # JSON lines: one {"event": "problem", ...} per problem.
    listed = [json.loads(line) for line in subprocess.run([options.pkbw, "problems", "--json"], capture_output=True,
                                                          text=True, check=True).stdout.splitlines() if line]
    stems = {p["id"]: p["stem"] for p in listed}
    pkb_stems = {int(f.split("_")[0]): f[:-3] for f in os.listdir(os.path.join(options.pkb_checkout, "reference"))
                 if re.match(r"^\d+_.*\.py$", f)}
    rows = []
    print(f"| # | problem | dtype | W | max abs error | PKB rule (atol {options.atol}, rtol {options.rtol}) | s |")
    print("|---|---|---|---|---|---|---|")
    def one(problem, dtype, world, work):
        """One table row: (problem, dtype, W) through pkbw and PKB."""
        start = time.monotonic()
        stem = stems.get(problem, pkb_stems.get(problem, "?"))
        if options.pkb_only:
            result = verdict(run_ranks(options, python, None, world, dtype, problem))
        else:
            run_dir, status, message = pkbw_dryrun(options, stem, world, dtype, work)
            if status != "pass" or not run_dir:
                result = ("pkbw_error", None, [f"pkbw dryrun: {status}: {message[:200]}"])
            else:
                result = verdict(run_ranks(options, python, run_dir, world, dtype))
                shutil.rmtree(run_dir, ignore_errors=True)
        return {"problem": problem, "stem": stem, "dtype": dtype, "world_size": world, "status": result[0],
                "max_abs_error": result[1], "detail": result[2], "seconds": round(time.monotonic() - start, 1)}

    def show(row):
        if row["status"] == "no_pkbw_problem":
            print(f"| {row['problem']} | {row['stem']} | | | | {row['detail'][0]} | |", flush=True)
            return
        error = "" if row["max_abs_error"] is None else f"{row['max_abs_error']:.3g}"
        shown = row["status"] + (": " + "; ".join(row["detail"]) if row["detail"] else "")
        print(f"| {row['problem']} | {row['stem']} | {row['dtype']} | {row['world_size']} | {error} | {shown} "
              f"| {row['seconds']} |", flush=True)

    with tempfile.TemporaryDirectory(prefix="pkb-crosscheck-") as work, \
            concurrent.futures.ThreadPoolExecutor(max_workers=max(1, options.jobs)) as pool:
        pending = []
        for problem in parse_list(options.problems):
            if problem not in stems and not options.pkb_only:
                pending.append({"problem": problem, "stem": pkb_stems.get(problem, "?"), "status": "no_pkbw_problem",
                                "detail": [f"no pkbw problem {problem} (PKB: {pkb_stems.get(problem, 'none')})"]})
                continue
            if problem in stems and stems[problem] != pkb_stems.get(problem):
                print(f"note: pkbw {stems[problem]} vs PKB {pkb_stems.get(problem)} (numbering differs?)")
            for dtype in options.dtypes.split(","):
                for world in parse_list(options.worlds):
                    pending.append(pool.submit(one, problem, dtype, world, work))
        for item in pending:  # in table order, each as soon as it and those above it are done
            row = item if isinstance(item, dict) else item.result()
            rows.append(row)
            show(row)
    if options.json:
        with open(options.json, "w") as handle:
            json.dump(rows, handle, indent=1)
    bad = [r for r in rows if r["status"] in ("mismatch", "error", "pkbw_error")]
    return 1 if bad else 0


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "table":
        return table_main(sys.argv[2:])
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pkb-checkout", required=True)
    parser.add_argument("--run-dir")
    parser.add_argument("--pkb-only", type=int, metavar="ID",
                        help="run PKB's reference of problem ID on PKB's own inputs (no pkbw run)")
    parser.add_argument("--trial", type=int, default=0)
    parser.add_argument("--m", type=int, default=1024, help="M of the pkbw run (PKB builds its arguments with it)")
    parser.add_argument("--n", type=int, default=1024, help="N of the pkbw run")
    parser.add_argument("--dtype", help="dtype of the pkbw run (default: that of its first floating input)")
    parser.add_argument("--backend", choices=["auto", "nccl", "gloo"], default="auto")
    parser.add_argument("--atol", type=float, default=1e-2)
    parser.add_argument("--rtol", type=float, default=1e-2)
    parser.add_argument("--collective-timeout", type=float, default=300.0)
    args = parser.parse_args()
    if args.run_dir is None and args.pkb_only is None:
        parser.error("--run-dir (or --pkb-only) is required")
    return rank_main(args)


if __name__ == "__main__":
    sys.exit(main())
