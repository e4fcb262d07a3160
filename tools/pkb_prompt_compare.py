#!/usr/bin/env python3
"""Compare `pkbw prompt` with PKB's own `kernelgen/generate_kernel.py --print-prompt`, byte for byte.

Usage: python3 tools/pkb_prompt_compare.py --pkb-checkout /path/to/ParallelKernelBench --pkbw build/bin/pkbw

For every backend x precision x hardware profile (none included) of the checkout's prompts.toml, both
programs print the prompts of every problem (--problem all); the outputs are split per problem and
compared. Prints one line per combination and the totals (compared / identical / differing, with the
first differing byte of each difference).

PKB's script imports the `toml` package (toml 0.10) at the top. When it is not installed, this script
runs PKB's script in a child interpreter with a stand-in `toml` module whose `load()` is Python 3.11's
standard `tomllib` (the only function the script uses); that is the one emulation done, and it is
reported in the output.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

MODEL_PKB = "gemini-3-flash-preview"   # an allow-listed model; it only names the footer's folder
MODEL_PKBW = "google/gemini-3-flash-preview"

TOML_SHIM = '''\
"""Stand-in for the `toml` package (not installed): load() via the standard tomllib."""
import tomllib

def load(f):
    if hasattr(f, "read"):
        data = f.read()
        return tomllib.loads(data if isinstance(data, str) else data.decode("utf-8"))
    with open(f, "rb") as handle:
        return tomllib.load(handle)
'''

HEADER = re.compile(rb"^={72}\nPROBLEM (.+)\n={72}\n", re.M)


def split_blocks(output: bytes) -> dict[str, bytes]:
    blocks: dict[str, bytes] = {}
    matches = list(HEADER.finditer(output))
    for i, m in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(output)
        blocks[m.group(1).decode()] = output[m.start():end]
    return blocks


def first_difference(a: bytes, b: bytes) -> int:
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return min(len(a), len(b))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pkb-checkout", required=True, type=Path)
    parser.add_argument("--pkbw", default="build/bin/pkbw")
    parser.add_argument("--python", default=sys.executable)
    args = parser.parse_args()
    checkout = args.pkb_checkout.resolve()
    script = checkout / "kernelgen" / "generate_kernel.py"
    prompts = checkout / "kernelgen" / "prompts.toml"
    import tomllib
    with open(prompts, "rb") as f:
        cfg = tomllib.load(f)
    backends = list(cfg["backends"])
    precisions = list(cfg["precision"])
    hardware = [None] + list(cfg.get("hardware_profiles", {}))

    env = dict(os.environ)
    shim_dir = None
    emulated = importlib.util.find_spec("toml") is None
    if emulated:
        shim_dir = tempfile.TemporaryDirectory(prefix="pkb_toml_shim_")
        Path(shim_dir.name, "toml.py").write_text(TOML_SHIM)
        env["PYTHONPATH"] = shim_dir.name + os.pathsep + env.get("PYTHONPATH", "")
        print("note: the `toml` package is not installed; PKB's script ran with a stand-in `toml.load` "
              "backed by Python's tomllib")
    env.pop("PROBLEM_DIR", None)

    totals = {"compared": 0, "identical": 0, "differing": 0, "missing": 0}
    for backend in backends:
        for precision in precisions:
            for hw in hardware:
                hw_args = ["--hardware", hw] if hw else []
                pkb = subprocess.run([args.python, str(script), "--print-prompt", "--problem", "all",
                                      "--backend", backend, "--precision", precision, "--model", MODEL_PKB,
                                      *hw_args], cwd=checkout, env=env, capture_output=True)
                ours = subprocess.run([args.pkbw, "prompt", "--problem", "all", "--backend", backend,
                                       "--precision", precision, "--model", MODEL_PKBW, "--pkb-checkout",
                                       str(checkout), *hw_args], capture_output=True)
                label = f"{backend:16s} {precision:5s} {hw or 'none':8s}"
                if pkb.returncode != 0 or ours.returncode != 0:
                    print(f"{label} FAILED: pkb rc={pkb.returncode} {pkb.stderr.decode()[-300:]!r} "
                          f"pkbw rc={ours.returncode} {ours.stderr.decode()[-300:]!r}")
                    totals["missing"] += 1
                    continue
                theirs_blocks, our_blocks = split_blocks(pkb.stdout), split_blocks(ours.stdout)
                same = diff = 0
                for stem, block in theirs_blocks.items():
                    totals["compared"] += 1
                    mine = our_blocks.get(stem)
                    if mine == block:
                        same += 1
                    else:
                        diff += 1
                        if mine is None:
                            print(f"  {stem}: missing from pkbw's output")
                        else:
                            at = first_difference(block, mine)
                            print(f"  {stem}: first differing byte {at}: pkb {block[at:at+40]!r} "
                                  f"pkbw {mine[at:at+40]!r}")
                extra = set(our_blocks) - set(theirs_blocks)
                whole = "whole output identical" if pkb.stdout == ours.stdout else "whole output differs"
                print(f"{label} problems {len(theirs_blocks):3d} identical {same:3d} differing {diff:3d}"
                      f"{' extra ' + str(sorted(extra)) if extra else ''}  ({whole})")
                totals["identical"] += same
                totals["differing"] += diff
    print(f"total: compared {totals['compared']} identical {totals['identical']} "
          f"differing {totals['differing']} combinations failed {totals['missing']}")
    return 0 if totals["differing"] == 0 and totals["missing"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
