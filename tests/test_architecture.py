"""The package's structural rules (docs/ARCHITECTURE.md), checked on the source: module size,
no import cycles, objective names compared only in `electra_tf/objectives/`."""

import ast
import os

from harness import REPO

from electra_tf import objectives

PACKAGE = os.path.join(REPO, "electra_tf")
MAX_LINES = 400


def modules() -> dict:
    """Module name -> source path, for every module of the package."""
    out = {}
    for root, _, files in os.walk(PACKAGE):
        for f in files:
            if f.endswith(".py"):
                path = os.path.join(root, f)
                rel = os.path.relpath(path, REPO)[: -len(".py")].replace(os.sep, ".")
                out[rel[: -len(".__init__")] if rel.endswith(".__init__") else rel] = path
    return out


def imports_of(name: str, path: str, known: set) -> set:
    """The package modules `name` imports anywhere in its source (function bodies included),
    with the parent packages that importing a submodule runs first."""
    tree = ast.parse(open(path, encoding="utf-8").read())
    is_package = path.endswith("__init__.py")
    found = set()
    for node in ast.walk(tree):
        targets = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = name.split(".")
                parts = parts[: len(parts) - node.level + (1 if is_package else 0)]
                base = ".".join(parts + ([base] if base else []))
            targets = [base] + [f"{base}.{a.name}" for a in node.names]
        for t in targets:
            while t:
                if t in known and t != name:
                    found.add(t)
                t = t.rpartition(".")[0]
    return found


def test_no_module_is_over_400_lines():
    long = {}
    for name, path in modules().items():
        with open(path, encoding="utf-8") as f:
            n = sum(1 for _ in f)
        if n > MAX_LINES:
            long[name] = n
    assert not long, long


def test_no_import_cycles():
    mods = modules()
    graph = {name: imports_of(name, path, set(mods)) for name, path in mods.items()}
    # a package importing its own submodules is how packages work, not a cycle
    graph = {n: {d for d in deps if not d.startswith(n + ".")} for n, deps in graph.items()}
    state, stack, cycles = {}, [], []

    def visit(n):
        state[n] = "open"
        stack.append(n)
        for d in sorted(graph[n]):
            if state.get(d) == "open":
                cycles.append(stack[stack.index(d) :] + [d])
            elif d not in state:
                visit(d)
        stack.pop()
        state[n] = "done"

    for n in sorted(graph):
        if n not in state:
            visit(n)
    assert not cycles, cycles[:5]


def _compares_objective_name(node) -> bool:
    names = set(objectives.NAMES)

    def literal(n):
        if isinstance(n, ast.Constant) and isinstance(n.value, str):
            return n.value in names
        if isinstance(n, (ast.Tuple, ast.List, ast.Set)):
            return any(literal(e) for e in n.elts)
        return False

    return isinstance(node, ast.Compare) and any(literal(x) for x in [node.left, *node.comparators])


def test_objective_names_are_compared_only_in_the_objectives_package():
    offenders = []
    for name, path in modules().items():
        if name.startswith("electra_tf.objectives"):
            continue
        tree = ast.parse(open(path, encoding="utf-8").read())
        offenders += [f"{name}:{n.lineno}" for n in ast.walk(tree) if _compares_objective_name(n)]
    assert not offenders, offenders


def test_the_checks_can_fail():
    """The cycle and comparison detectors find what they look for."""
    tree = ast.parse('if objective == "mlm": pass\nx = a in ("electra_15", "b")')
    assert sum(_compares_objective_name(n) for n in ast.walk(tree)) == 2
    here = os.path.join(PACKAGE, "objectives", "adversarial.py")
    deps = imports_of("electra_tf.objectives.adversarial", here, set(modules()))
    assert {"electra_tf.modeling.heads", "electra_tf.modeling", "electra_tf"} <= deps
