#!/usr/bin/env python3
"""Fails when engine/ or app/ C++ writes a run-contract word as a literal where core's constant belongs.

The words that cross process boundaries (rank exit codes, rank_result statuses, error kinds, phases)
are defined once in core/include/pkbw/core/status.h (docs/engine.md, "Rank program contract"); a
sweep's status and its pairs' states, which the store keeps and the GUI reads, in
core/include/pkbw/core/sweep_store.h. A
literal copy compiles and passes every test until the word changes in core; then the copy silently
speaks an old dialect. This scan looks only at the shapes in which a literal IS the contract word (a
JSON pair of an event, a phase() call, an error kind thrown, a status compared or assigned, a rank's
exit code), so that words spelled the same elsewhere (a CLI flag, a log sentence) stay free.

Usage: check_contract_literals.py [REPO_ROOT]. Exit 0 when clean, 1 naming file:line for each hit.
"""

import fnmatch
import pathlib
import re
import sys

STATUSES = "pass|mismatch|invalid_output|error|crash|invalid_timing"
KINDS = "solution_error|cuda_error|nccl_error|rendezvous|environment|internal"
PHASES = "start|compile|rendezvous|inputs|candidate|reference|compare|perf|trace|teardown"
# The store's sweep words (core/include/pkbw/core/sweep_store.h: sweep_status, pair_state).
SWEEP_STATUSES = "running|submitted|done|incomplete|interrupted"
PAIR_STATES = "pending|done|failed"

# (what the literal means, pattern); each pattern matches one line of C++.
RULES = [
    ("rank_result/run status in a JSON pair", rf'\{{\s*"status"\s*,\s*"({STATUSES})"\s*\}}'),
    ("phase in a JSON pair", rf'\{{\s*"phase"\s*,\s*"({PHASES})"\s*\}}'),
    ("error kind in a JSON pair", rf'\{{\s*"kind"\s*,\s*"({KINDS})"\s*\}}'),
    ("phase announced", rf'\b(phase|set_phase|candidate_broke)\([^()]*?"({PHASES})"'),
    ("error kind thrown", rf'\b(DeviceError|CandidateFailure)\(\s*"({KINDS})"'),
    ("error kind as a default", rf'value\(\s*"kind"\s*,\s*(std::string\()?"({KINDS})"'),
    ("status as a default", rf'(value|json_text)\([^()]*"status"\s*,\s*(std::string\()?"({STATUSES})"'),
    ("status compared", rf'\b\w*(status|verdict)\w*\s*[!=]=\s*(QLatin1String\()?"({STATUSES})"'),
    ("status assigned", rf'\b\w*status\w*\s*=\s*"({STATUSES})"\s*;'),
    ("status declared", rf'std::string\s+\w*status\w*\s*(=\s*|\{{|\()"({STATUSES})"'),
    ("status noted", rf'\bnote\(\s*"({STATUSES})"'),
    ("run ended with a status", rf'\b(fail|finish)\(\s*"({STATUSES})"'),
    ("phase compared or assigned", rf'\bphase\w*\s*([!=]=|=)\s*(QLatin1String\()?"({PHASES})"'),
    ("rank exit code", r'\b_?exit\(\s*[345]\s*\)'),
    ("rank exit code compared", r'\bexit_code\s*[!=]=\s*[345]\b'),
    ("sweep status set", rf'\bset_sweep_status\([^;]*"({SWEEP_STATUSES})"'),
    ("sweep status compared", rf'\bsweep\w*\.status\s*[!=]=\s*(QLatin1String\()?"({SWEEP_STATUSES})"'),
    ("sweep pair state", rf'\bstate\s*([!=]=|=)\s*"({PAIR_STATES})"'),
    ("pkbw's interrupted exit code", r'(\breturn|\?|:)\s*130\b'),
]
# Rules for the folders of pkbw's own commands, where a function returning 1, 2 or 3 returns pkbw's
# exit code (status::kExitFailed, kExitUsage, kExitEnvironment).
COMMAND_FOLDERS = ("engine/cli/", "engine/run/", "engine/sweep/")
COMMAND_RULES = [
    ("pkbw exit code returned", r'\breturn\s+[123]\s*;'),
    ("pkbw exit code chosen", r'\breturn\b[^;]*\?\s*(0\s*:\s*[123]|[123]\s*:\s*0)\s*;'),
]
COMPILED = [(why, re.compile(pattern)) for why, pattern in RULES]
COMPILED_COMMANDS = [(why, re.compile(pattern)) for why, pattern in COMMAND_RULES]

# Files another change is converting at the moment (fnmatch patterns); each leaves this list when it
# uses core's words.
PENDING = ()
SOURCES = ("engine", "app")
SUFFIXES = {".cpp", ".h", ".hpp", ".cu", ".cuh"}


def strip_comment(line):
    """The code of a line, without a trailing // comment (a comment may quote the words freely)."""
    in_string = False
    for i, c in enumerate(line):
        if c == '"' and (i == 0 or line[i - 1] != "\\"):
            in_string = not in_string
        elif not in_string and line.startswith("//", i):
            return line[:i]
    return line


def scan_file(path, relative):
    hits = []
    rules = COMPILED + (COMPILED_COMMANDS if relative.startswith(COMMAND_FOLDERS) else [])
    for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
        code = strip_comment(line)
        for why, pattern in rules:
            if pattern.search(code):
                hits.append(f"{relative}:{number}: {why}: {line.strip()}")
                break
    return hits


def scan(root):
    hits = []
    for top in SOURCES:
        for path in sorted((root / top).rglob("*")):
            relative = path.relative_to(root).as_posix()
            pending = any(fnmatch.fnmatch(relative, pattern) for pattern in PENDING)
            if path.suffix in SUFFIXES and path.is_file() and not pending:
                hits += scan_file(path, relative)
    return hits


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parents[1])
    if not (root / "core/include/pkbw/core/status.h").is_file():
        print(f"check_contract_literals: {root} has no core/include/pkbw/core/status.h", file=sys.stderr)
        return 2
    hits = scan(root)
    for hit in hits:
        print(hit)
    if hits:
        print(f"{len(hits)} run-contract literal(s): use core/include/pkbw/core/status.h's constants "
              "(status::kExit*, kPass..., kKind*, kPhase*) or core/include/pkbw/core/sweep_store.h's "
              "(sweep_status::*, pair_state::*)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
