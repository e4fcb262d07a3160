#!/usr/bin/env python3
"""Fails when a module of engine/python reads a global name that nothing defines.

The Python judge's GPU paths (CUDA timing, graphs) run only on a GPU machine, which CI lacks: a name
left behind by a refactoring there would surface as a NameError in the middle of a user's run. This
reads each module's symbol tables (the standard library's symtable): every name a function reads as a
global must be bound at the module's top level (def, class, import, assignment, for, with, except) or
be a builtin.

Usage: check_python_names.py FILE.py... (tests/tools runs it on engine/python). Exit 0 when every name resolves, 1 naming file:function:name.
"""

import ast
import builtins
import symtable
import sys


def module_bindings(tree):
    """Names bound at module level, anywhere outside functions and classes (also under if/try/with)."""
    names = set()

    class Top(ast.NodeVisitor):
        def visit_FunctionDef(self, node):
            names.add(node.name)

        visit_AsyncFunctionDef = visit_FunctionDef

        def visit_ClassDef(self, node):
            names.add(node.name)

        def visit_Lambda(self, node):
            pass

        def visit_Name(self, node):
            if isinstance(node.ctx, (ast.Store, ast.Del)):
                names.add(node.id)

        def visit_Import(self, node):
            for alias in node.names:
                names.add((alias.asname or alias.name).split(".")[0])

        visit_ImportFrom = visit_Import

        def visit_ExceptHandler(self, node):
            if node.name:
                names.add(node.name)
            self.generic_visit(node)

    Top().visit(tree)
    return names


def unresolved(path):
    source = open(path, encoding="utf-8").read()
    tree = ast.parse(source, path)
    bound = module_bindings(tree) | set(dir(builtins)) | {"__file__", "__name__", "__doc__", "__spec__"}
    found = []

    def walk(table, where):
        for symbol in table.get_symbols():
            if symbol.is_referenced() and (symbol.is_global() or (table.get_type() == "module" and not symbol.is_assigned() and not symbol.is_imported())):
                if symbol.get_name() not in bound:
                    found.append(f"{path}:{where or '<module>'}: {symbol.get_name()}")
        for child in table.get_children():
            walk(child, (where + "." if where else "") + child.get_name())

    walk(symtable.symtable(source, path, "exec"), "")
    return found


def main(paths):
    problems = [p for path in paths for p in unresolved(path)]
    for problem in problems:
        print(problem)
    if problems:
        print(f"{len(problems)} name(s) that nothing defines", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
