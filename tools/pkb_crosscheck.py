#!/usr/bin/env python3
"""Cross-checks pkbw's reference against PKB's own PyTorch reference on the same inputs.

Run it with torchrun at the world size of a pkbw run that kept its inputs and reference outputs
(`pkbw dryrun --solution reference --keep-outputs --keep-inputs ...` or an eval with both flags):

    torchrun --nproc-per-node W tools/pkb_crosscheck.py --pkb-checkout PKB_DIR --run-dir RUN_DIR [--trial K]

Each rank loads its pkbw inputs (outputs/trial_K/rank_R_inputs.safetensors), calls PKB's
reference/<stem>.py `solution(*inputs, **params)` under torch.distributed (NCCL), and compares the
result with pkbw's reference output of that rank using PKB's rule (torch.allclose(pkb, pkbw, atol,
rtol) on the fp32 cast). Rank 0 prints one line per rank and a JSON summary line. PKB's code is read
from the checkout given; nothing of it is copied into pkbw.
"""
import argparse
import importlib.util
import inspect
import json
import os
import sys

import torch
import torch.distributed as dist
from safetensors import safe_open
from safetensors.torch import load_file

# pkbw parameter names that PKB's references spell differently.
ALIASES = {"src": "root", "dst": "root"}


def load_pkb_solution(checkout, stem):
    path = os.path.join(checkout, "reference", stem + ".py")
    if not os.path.exists(path):
        sys.exit(f"pkb_crosscheck: {path} does not exist (wrong --pkb-checkout or problem)")
    spec = importlib.util.spec_from_file_location("pkb_reference_" + stem.split("_")[0], path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.solution


def flatten(value, name="output"):
    """PKB's outputs as pkbw names them (docs/formats.md): a tensor -> output, a tuple -> output_i."""
    if isinstance(value, torch.Tensor):
        return {name: value}
    if isinstance(value, (list, tuple)):
        leaves = {}
        for i, item in enumerate(value):
            child = f"output_{i}" if name == "output" else f"{name}[{i}]"
            leaves.update(flatten(item, child))
        return leaves
    if isinstance(value, dict):
        leaves = {}
        for key, item in value.items():
            leaves.update(flatten(item, str(key) if name == "output" else f"{name}.{key}"))
        return leaves
    return {}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pkb-checkout", required=True)
    parser.add_argument("--run-dir", required=True)
    parser.add_argument("--trial", type=int, default=0)
    parser.add_argument("--atol", type=float, default=1e-2)
    parser.add_argument("--rtol", type=float, default=1e-2)
    args = parser.parse_args()

    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", device_id=torch.device("cuda", rank))
    trial_dir = os.path.join(args.run_dir, "outputs", f"trial_{args.trial}")
    inputs_path = os.path.join(trial_dir, f"rank_{rank}_inputs.safetensors")
    with safe_open(inputs_path, "pt") as handle:
        meta = handle.metadata()
    stem = meta["pkbw.problem"]
    order = meta["pkbw.input_order"].split(",")
    params = json.loads(meta.get("pkbw.params", "{}"))
    loaded = load_file(inputs_path, device=f"cuda:{rank}")
    tensors = [loaded[name] for name in order]

    solution = load_pkb_solution(args.pkb_checkout, stem)
    kwargs = {}
    for index, parameter in enumerate(inspect.signature(solution).parameters.values()):
        if index < len(tensors):
            continue
        key = parameter.name if parameter.name in params else ALIASES.get(parameter.name)
        if key in params:
            value = params[key]
            kwargs[parameter.name] = int(value) if float(value).is_integer() and parameter.annotation is int else value
    result = solution(*tensors, **kwargs)
    torch.cuda.synchronize()
    pkb = flatten(result)
    pkbw = load_file(os.path.join(trial_dir, f"rank_{rank}_reference.safetensors"), device=f"cuda:{rank}")

    report = {"rank": rank, "ok": True, "max_abs_error": 0.0, "detail": []}
    if set(pkb) != set(pkbw):
        report["ok"] = False
        report["detail"].append(f"names differ: pkb {sorted(pkb)} pkbw {sorted(pkbw)}")
    for name in sorted(set(pkb) & set(pkbw)):
        a, b = pkb[name].float(), pkbw[name].float()
        if a.shape != b.shape:
            report["ok"] = False
            report["detail"].append(f"{name}: shape pkb {list(a.shape)} vs pkbw {list(b.shape)}")
            continue
        error = (a - b).abs().max().item() if a.numel() else 0.0
        report["max_abs_error"] = max(report["max_abs_error"], error)
        if not torch.allclose(a, b, atol=args.atol, rtol=args.rtol):
            report["ok"] = False
            report["detail"].append(f"{name}: not allclose, max abs error {error:.3g}")
    reports = [None] * world
    dist.all_gather_object(reports, report)
    if rank == 0:
        for r in reports:
            print(f"{stem} W={world} trial {args.trial} rank {r['rank']}: {'match' if r['ok'] else 'MISMATCH'} "
                  f"max_abs_error={r['max_abs_error']:.3g} {'; '.join(r['detail'])}")
        print("PKBW_CROSSCHECK_JSON:" + json.dumps({"problem": stem, "world_size": world, "trial": args.trial,
                                                    "ok": all(r["ok"] for r in reports),
                                                    "max_abs_error": max(r["max_abs_error"] for r in reports)}))
    dist.barrier()
    dist.destroy_process_group()
    return 0 if all(r["ok"] for r in reports) else 1


if __name__ == "__main__":
    sys.exit(main())
