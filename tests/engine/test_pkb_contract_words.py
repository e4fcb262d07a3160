#!/usr/bin/env python3
"""PKB's Python judge speaks the run contract as core/include/pkbw/core/status.h defines it, and
writes the run folder as core/include/pkbw/core/run_layout.h lays it out.

pkbw_pkb_rank.py is a second rank program beside pkbw-rank, read by the same launcher, and Python
cannot include status.h: its modules restate the words (exit codes, rank_result statuses, error kinds,
phases) as named constants in one module, pkbw_pkb_contract.py. This test reads status.h's constants and
fails when
  - a constant of the judge (EXIT_*, STATUS_*, KIND_*, PHASE_*) has no counterpart in core or another
    value than core's (EXIT_SOLUTION_BROKE <-> kExitSolutionBroke, STATUS_PASS <-> kPass,
    KIND_CUDA_ERROR <-> kKindCudaError, PHASE_INPUTS <-> kPhaseInputs);
  - a phase, kind, status or exit code a judge module sends or returns is a literal, or is not core's
    word, or a judge module other than the contract defines such a constant;
  - a kind the candidate process (pkbw_pkb_candidate.py, pkbw_pkb_solution.py) reports is neither
    core's nor one the judge turns into a status itself;
  - an event a judge or candidate module sends (`events.send("perf_result", ...)`) is not one of
    core/include/pkbw/core/protocol.h's event names;
  - a rank environment variable (ENV_SANDBOX <-> core/include/pkbw/core/rank_environment.h's
    kEnvSandbox) differs from core's, or a module of engine/python names one as a literal;
  - a perf option's default (PERF_PAIRS <-> core/include/pkbw/core/perf_defaults.h's kPerfPairs) differs
    from core's, or a judge module reads a perf option with a literal default (`o.get("pairs", 10)`).
Standard library only: no torch, no build.
"""

import ast
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
STATUS_H = ROOT / "core/include/pkbw/core/status.h"
RUN_LAYOUT_H = ROOT / "core/include/pkbw/core/run_layout.h"
PERF_DEFAULTS_H = ROOT / "core/include/pkbw/core/perf_defaults.h"
PROTOCOL_H = ROOT / "core/include/pkbw/core/protocol.h"
RANK_ENVIRONMENT_H = ROOT / "core/include/pkbw/core/rank_environment.h"
CONTRACT = ROOT / "engine/python/pkbw_pkb_contract.py"  # the judge's constants, one module
# The judge's modules: every word they send or return is checked.
JUDGE_MODULES = [ROOT / "engine/python" / name for name in
                 ("pkbw_pkb_rank.py", "pkbw_pkb_rank_startup.py", "pkbw_pkb_rank_resources.py", "pkbw_pkb_worker.py",
                  "pkbw_pkb_timing.py", "pkbw_pkb_checked_timing.py", "pkbw_pkb_timed_sides.py",
                  "pkbw_pkb_timing_slots.py", "pkbw_pkb_outputs.py")]
# The candidate's process (pkbw_pkb_candidate.py) and the module whose error_kind names its failures.
CANDIDATE_MODULES = [ROOT / "engine/python" / name for name in ("pkbw_pkb_candidate.py", "pkbw_pkb_solution.py")]

# Kinds the candidate process reports to its judge only: the judge makes them an invalid_output status
# (OutputRefused) or re-draws the inputs (InputsNotRebuilt); they never reach the launcher as a kind.
CHANNEL_ONLY_KINDS = {"invalid_output", "input_error"}
CATEGORIES = ("EXIT", "STATUS", "KIND", "PHASE")


def core_constants(text):
    """A header's `inline constexpr int kName = N;`, `... std::string_view kName = "value";`, and the
    bool and double constants (`... bool kName = true;`, `... double kName = 0.25;`)."""
    found = {}
    pattern = (r'inline\s+constexpr\s+(?:int|bool|double|std::string_view)\s+(k\w+)\s*=\s*'
               r'(?:"([^"]*)"|(true|false)|(-?\d+\.\d*)|(-?\d+))\s*;')
    for name, text_value, bool_value, double_value, int_value in re.findall(pattern, text):
        found[name] = (text_value if not (bool_value or double_value or int_value) else
                       bool_value == "true" if bool_value else float(double_value) if double_value else int(int_value))
    return found


def core_name(python_name):
    """EXIT_SOLUTION_BROKE -> kExitSolutionBroke; STATUS_PASS -> kPass (core's statuses have no prefix)."""
    category, _, rest = python_name.partition("_")
    camel = "".join(part.capitalize() for part in rest.split("_"))
    return "k" + camel if category == "STATUS" else "k" + category.capitalize() + camel


# pkbw's own exit codes (the CLI's, not a rank program's): a judge never ends with them.
PKBW_EXIT_CODES = ("kExitFailed", "kExitUsage", "kExitInterrupted")


def core_words(core):
    """Core's values by category: what a judge may send as a status, a kind, a phase, an exit code."""
    def values(prefix, exclude=()):
        return {v for k, v in core.items() if k.startswith(prefix) and not k.startswith(exclude)}
    statuses = {v for k, v in core.items()
                if isinstance(v, str) and not k.startswith(("kKind", "kPhase", "kMode"))}
    return {"EXIT": values("kExit", PKBW_EXIT_CODES), "STATUS": statuses, "KIND": values("kKind"),
            "PHASE": values("kPhase")}


def check_layout(contract, modules, failures):
    """The judge's LAYOUT_* patterns are run_layout.h's (LAYOUT_TRIAL_DIR <-> kTrialDir), and the judge
    spells no run-folder file name outside them. Returns how many it holds."""
    core = core_constants(RUN_LAYOUT_H.read_text())
    layout = module_constants(contract, lambda name: name.startswith("LAYOUT_"))
    check_counterparts(layout, core, "k", RUN_LAYOUT_H.name, failures)
    for path, tree in modules:
        check_layout_literals(path, tree, failures)
    return len(layout)


def check_layout_literals(path, tree, failures):
    for node in ast.walk(tree):
        texts = [node.value] if isinstance(node, ast.Constant) and isinstance(node.value, str) else []
        if isinstance(node, ast.JoinedStr):
            texts = [v.value for v in node.values if isinstance(v, ast.Constant) and isinstance(v.value, str)]
        for text in texts:
            if re.search(r"events\.jsonl|\.safetensors$|torch\.json|(^|/)(trial|rank)_(\{|$)", text):
                failures.append(f"{path.name}:{node.lineno}: {text!r} spells a run-folder file: use a LAYOUT_* pattern")


def module_constants(tree, accept):
    """Module-level NAME = value (also NAME1, NAME2 = v1, v2) whose name `accept` takes, as
    {name: (value, line)}."""
    constants = {}
    for node in tree.body:
        if not isinstance(node, ast.Assign) or len(node.targets) != 1:
            continue
        target, value = node.targets[0], node.value
        pairs = zip(target.elts, value.elts) if isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple) \
            else [(target, value)]
        for name, constant in pairs:
            if isinstance(name, ast.Name) and isinstance(constant, ast.Constant) and accept(name.id):
                constants[name.id] = (constant.value, node.lineno)
    return constants


def check_counterparts(constants, core, prefix, header, failures):
    """Each of the contract's `constants` ({NAME_OF_IT: (value, line)}) equals, value and type, the core
    constant `prefix` + its name after the first word in CamelCase (LAYOUT_TRACE_DIR <-> kTraceDir with
    prefix "k", PERF_PAIRS <-> kPerfPairs with prefix "kPerf") in `header`."""
    for name, (value, line) in sorted(constants.items()):
        counterpart = prefix + "".join(part.capitalize() for part in name.split("_")[1:])
        if counterpart not in core:
            failures.append(f"{CONTRACT.name}:{line}: {name} has no counterpart {counterpart} in {header}")
        elif core[counterpart] != value or type(core[counterpart]) is not type(value):
            failures.append(f"{CONTRACT.name}:{line}: {name} = {value!r}, but {header}'s {counterpart} = "
                            f"{core[counterpart]!r}")


def judge_constants(tree):
    """Module-level constants of the four categories (EXIT_*, STATUS_*, KIND_*, PHASE_*)."""
    return {name: value for name, (value, _) in
            module_constants(tree, lambda name: name.split("_")[0] in CATEGORIES).items()}


def check_constants(constants, core, failures):
    for name, value in sorted(constants.items()):
        counterpart = core_name(name)
        if counterpart not in core:
            failures.append(f"{CONTRACT.name}: {name} has no counterpart {counterpart} in status.h")
        elif core[counterpart] != value:
            failures.append(f"{CONTRACT.name}: {name} = {value!r}, but status.h's {counterpart} = {core[counterpart]!r}")


class Uses(ast.NodeVisitor):
    """Every place the judge hands the launcher a phase, kind, status or exit code."""

    def __init__(self):
        self.uses = []  # (category, expression, line)
        self.in_exit_function = []
        self.functions = []  # the enclosing functions, innermost last

    def assigned(self, name):
        """What the innermost enclosing function assigns to the local `name` (`status = STATUS_PASS`,
        `status, message = STATUS_UNCHECKED, "..."`): a word handed over through a variable is checked
        as if it were written in the call."""
        values = []
        for node in ast.walk(self.functions[-1]) if self.functions else ():
            if not isinstance(node, ast.Assign):
                continue
            for target in node.targets:
                if isinstance(target, ast.Name) and target.id == name:
                    values.append(node.value)
                elif isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple):
                    values += [v for t, v in zip(target.elts, node.value.elts)
                               if isinstance(t, ast.Name) and t.id == name]
        return values

    def role(self, category, value, line):
        """A use of `value` as a `category` word, through a local variable's assignments."""
        if isinstance(value, ast.Name) and value.id.split("_")[0] not in CATEGORIES:
            self.uses += [(category, v, line) for v in self.assigned(value.id)]
        else:
            self.uses.append((category, value, line))

    def visit_FunctionDef(self, node):
        # A function that returns an EXIT_* constant anywhere returns the rank's exit code everywhere.
        returns_exit = any(isinstance(n, ast.Return) and isinstance(n.value, ast.Name)
                           and n.value.id.startswith("EXIT_") for n in ast.walk(node)
                           if not isinstance(n, (ast.FunctionDef, ast.Lambda)) or n is node)
        self.in_exit_function.append(returns_exit)
        self.functions.append(node)
        self.generic_visit(node)
        self.functions.pop()
        self.in_exit_function.pop()

    def visit_Return(self, node):
        if self.in_exit_function and self.in_exit_function[-1] and node.value is not None:
            self.uses.append(("EXIT", node.value, node.lineno))
        self.generic_visit(node)

    def visit_Call(self, node):
        func, args = node.func, node.args
        method = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        owner = func.value.id if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) else ""
        # The judge's steps may reach the event sink as an attribute (self.events.send): the same owner.
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Attribute) and func.value.attr == "events":
            owner = "events"
        if owner == "events" and method == "phase" and args:
            self.uses.append(("PHASE", args[0], node.lineno))
        elif owner == "events" and method == "error" and len(args) >= 2:
            self.uses += [("PHASE", args[0], node.lineno), ("KIND", args[1], node.lineno)]
        elif method == "candidate_failed" and args:
            self.uses.append(("PHASE", args[0], node.lineno))
        elif owner == "events" and method == "send" and args and isinstance(args[0], ast.Constant):
            roles = {"rank_result": {"status": "STATUS"}, "error": {"phase": "PHASE", "kind": "KIND"},
                     "phase": {"phase": "PHASE"}, "timed_check": {"status": "STATUS"}}.get(args[0].value, {})
            for k in node.keywords:
                if k.arg in roles:
                    self.role(roles[k.arg], k.value, node.lineno)
        elif owner in ("sys", "os") and method in ("exit", "_exit") and args:
            self.uses.append(("EXIT", args[0], node.lineno))
        self.generic_visit(node)


def alternatives(expression):
    """The values an expression may take where that is written out: both arms of `a if c else b`."""
    if isinstance(expression, ast.IfExp):
        return alternatives(expression.body) + alternatives(expression.orelse)
    return [expression]


def check_uses(path, tree, constants, words, failures):
    visitor = Uses()
    visitor.visit(tree)
    checked = 0
    for category, expression, line in visitor.uses:
        for value in alternatives(expression):
            where = f"{path.name}:{line}"
            if isinstance(value, ast.Constant):
                failures.append(f"{where}: the {category.lower()} {value.value!r} is a literal; "
                                f"use the {category}_* constant")
                checked += 1
            elif isinstance(value, ast.Name) and value.id.split("_")[0] in CATEGORIES:
                if value.id.split("_")[0] != category:
                    failures.append(f"{where}: {value.id} is used as a {category.lower()}")
                elif value.id not in constants:
                    failures.append(f"{where}: {value.id} is not one of the judge's constants")
                elif constants[value.id] not in words[category]:
                    failures.append(f"{where}: {value.id} = {constants[value.id]!r} is not a core {category.lower()}")
                checked += 1
    return checked


def check_candidate_kinds(words, failures):
    """The kinds the candidate's process reports: {"kind": "..."} replies and error_kind()'s answers."""
    kinds = []
    for path in CANDIDATE_MODULES:
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Dict):
                kinds += [(path, v.value, v.lineno) for k, v in zip(node.keys, node.values)
                          if isinstance(k, ast.Constant) and k.value == "kind" and isinstance(v, ast.Constant)]
            if isinstance(node, ast.FunctionDef) and node.name == "error_kind":
                for ret in (n for n in ast.walk(node) if isinstance(n, ast.Return)):
                    kinds += [(path, v.value, ret.lineno) for v in alternatives(ret.value)
                              if isinstance(v, ast.Constant)]
    for path, kind, line in kinds:
        if kind not in words["KIND"] | CHANNEL_ONLY_KINDS:
            failures.append(f"{path.name}:{line}: kind {kind!r} is neither core's nor a channel-only kind")
    return len(kinds)


def check_event_names(failures):
    """Every event name the judge's and the candidate's modules send is protocol.h's. Returns how many."""
    names = {v for v in core_constants(PROTOCOL_H.read_text()).values() if isinstance(v, str)}
    sent = 0
    for path in JUDGE_MODULES + CANDIDATE_MODULES + [CONTRACT]:
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "send" \
                    and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
                receiver = node.func.value
                events = isinstance(receiver, ast.Name) and receiver.id in ("events", "self") or \
                    isinstance(receiver, ast.Attribute) and receiver.attr == "events"
                if not events:
                    continue
                sent += 1
                if node.args[0].value not in names:
                    failures.append(f"{path.name}:{node.lineno}: event {node.args[0].value!r} is not one of "
                                    f"protocol.h's event names")
    return sent


def check_environment(contract, failures):
    """The judge's ENV_* names are rank_environment.h's, and no module of engine/python spells one of
    core's variables as a literal. Returns how many the contract holds."""
    core = core_constants(RANK_ENVIRONMENT_H.read_text())
    env = module_constants(contract, lambda name: name.startswith("ENV_"))
    check_counterparts(env, core, "kEnv", RANK_ENVIRONMENT_H.name, failures)
    names = set(core.values())
    for path in sorted((ROOT / "engine/python").glob("*.py")):
        if path == CONTRACT:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Constant) and node.value in names:
                failures.append(f"{path.name}:{node.lineno}: {node.value!r} is a literal: use the contract's ENV_*")
    return len(env)


def check_perf_defaults(contract, modules, failures):
    """The judge's PERF_* defaults are perf_defaults.h's (PERF_PKB_WARMUP <-> kPerfPkbWarmup), and no judge
    module reads a perf option with a literal default. Returns how many defaults it holds."""
    core = core_constants(PERF_DEFAULTS_H.read_text())
    perf = module_constants(contract, lambda name: name.startswith("PERF_"))
    check_counterparts(perf, core, "kPerf", PERF_DEFAULTS_H.name, failures)
    fields = {"_".join(name.split("_")[1:]).lower() for name in perf}  # "pairs", "pkb_warmup", ...
    for path, tree in modules:
        for node in ast.walk(tree):
            # The perf options are the judge's `o` (Perf.o, self.o): a trace's "iterations" is another field.
            receiver = node.func.value if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) else None
            named_o = isinstance(receiver, ast.Name) and receiver.id == "o" or \
                isinstance(receiver, ast.Attribute) and receiver.attr == "o"
            if named_o and node.func.attr == "get" \
                    and len(node.args) == 2 and isinstance(node.args[0], ast.Constant) \
                    and node.args[0].value in fields and isinstance(node.args[1], ast.Constant):
                failures.append(f"{path.name}:{node.lineno}: perf option {node.args[0].value!r} read with the "
                                f"literal default {node.args[1].value!r}: use PERF_{node.args[0].value.upper()}")
    return len(perf)


def main():
    core = core_constants(STATUS_H.read_text())
    failures = []
    if not {"kExitOk", "kPass", "kKindInternal", "kPhaseInputs"} <= core.keys():
        failures.append(f"{STATUS_H}: its constants were not found ({sorted(core)})")
    words = core_words(core)
    contract = ast.parse(CONTRACT.read_text(), str(CONTRACT))
    constants = judge_constants(contract)
    for category in CATEGORIES:
        if not any(name.startswith(category + "_") for name in constants):
            failures.append(f"{CONTRACT.name}: no {category}_* constants at module level")
    modules = [(path, ast.parse(path.read_text(), str(path))) for path in JUDGE_MODULES]
    for path, tree in modules:  # the words are the contract module's alone
        for name in judge_constants(tree):
            failures.append(f"{path.name}: {name} is defined here; it belongs in {CONTRACT.name}")
    check_constants(constants, core, failures)
    uses = sum(check_uses(path, tree, constants, words, failures) for path, tree in modules)
    candidate_kinds = check_candidate_kinds(words, failures)
    layout = check_layout(contract, modules, failures)
    perf = check_perf_defaults(contract, modules, failures)
    events = check_event_names(failures)
    environment = check_environment(contract, failures)
    if environment < 3:
        failures.append(f"found only {environment} ENV_* names in the judge's contract")
    if events < 8:
        failures.append(f"found only {events} events sent by the judge's modules")
    if perf < 9:
        failures.append(f"found only {perf} PERF_* defaults in the judge's contract")
    if layout < 5:
        failures.append(f"found only {layout} LAYOUT_* patterns in the judge")
    if uses < 40 or candidate_kinds < 3:
        failures.append(f"found only {uses} uses in the judge and {candidate_kinds} kinds in the candidate: "
                        "has the judge's shape changed under this test?")
    for failure in failures:
        print(failure)
    print(f"{len(core)} core constants, {len(constants)} judge constants, {uses} uses, "
          f"{candidate_kinds} candidate kinds, {layout} layout patterns, {perf} perf defaults, {events} events sent: "
          f"{'FAILED' if failures else 'all agree'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
