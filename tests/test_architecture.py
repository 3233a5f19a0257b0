"""The package's structural rules (docs/ARCHITECTURE.md), checked on the source: module size,
no import cycles, the units' layers (imports go down only), objective names compared only in
`electra_tf/objectives/`."""

import ast
import os
import re

from harness import REPO

from electra_tf import objective_specs as objectives

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
    with open(path, encoding="utf-8") as f:
        targets = imported(name, f.read(), path.endswith("__init__.py"))
    found = set()
    for _, t in targets:
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


# -- the units' layers: bottom to top, as docs/ARCHITECTURE.md's "Layers" lists them ---------
# A unit (a top-level module or subpackage of electra_tf) imports only units of lower layers,
# imports inside functions included; units of one layer import none of each other.
LAYERS = [
    ["errors"],
    ["io_utils", "run_lock", "vocab", "data_layout"],
    ["hparams", "model_config", "foreign_dirs", "objective_specs"],
    ["flops", "run_dir"],
    ["sectioned_config", "recipes"],
    ["pretraining_config"],
    ["tokenization", "packing", "masking", "optimization"],
    ["pretraining_data"],
    ["modeling"],
    ["objectives", "electra_mlm"],
    ["keras_hub"],
    ["huggingface"],
    ["pretraining_networks"],
    ["checkpoint"],
    ["train"],
    ["finetune"],
    ["export"],
    ["demo"],
]
PACKAGE_NAME = "electra_tf"


def unit_of(module: str):
    """`electra_tf.checkpoint.restore` -> "checkpoint"; None for the package root or outside."""
    parts = module.split(".")
    return parts[1] if parts[0] == PACKAGE_NAME and len(parts) > 1 else None


def imported(module: str, source: str, is_package: bool) -> list:
    """(line, module or module.name) of every import in `source`, anywhere (function bodies
    too): `import a.b`, `from a import b` (as "a.b"), relative imports resolved."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = module.split(".")
                parts = parts[: len(parts) - node.level + (1 if is_package else 0)]
                base = ".".join(parts + ([base] if base else []))
            found += [(node.lineno, f"{base}.{a.name}") for a in node.names]
    return found


def package_sources(root: str) -> dict:
    """Module name -> (source, is_package) of every module of the package under `root`."""
    out = {}
    for directory, _, files in os.walk(os.path.join(root, PACKAGE_NAME)):
        for f in files:
            if f.endswith(".py"):
                path = os.path.join(directory, f)
                name = os.path.relpath(path, root)[: -len(".py")].replace(os.sep, ".")
                is_package = f == "__init__.py"
                name = name[: -len(".__init__")] if is_package else name
                with open(path, encoding="utf-8") as fh:
                    out[name] = (fh.read(), is_package)
    return out


def layer_violations(sources: dict, layers: list) -> list:
    """Each import of a unit that is not in a lower layer than the importer's, and each unit
    without a layer, as "module:line: unit (layer i) imports unit (layer j)"."""
    layer = {u: i for i, units in enumerate(layers) for u in units}
    bad = []
    for module, (source, is_package) in sorted(sources.items()):
        unit = unit_of(module)
        if unit is None:
            continue
        if unit not in layer:
            bad.append(f"{module}: unit {unit} has no layer")
            continue
        for line, target in imported(module, source, is_package):
            other = unit_of(target)
            if other is None or other == unit:
                continue
            if layer.get(other, len(layers)) >= layer[unit]:
                bad.append(
                    f"{module}:{line}: {unit} (layer {layer[unit] + 1}) imports {other} "
                    f"(layer {layer[other] + 1 if other in layer else 'none'})"
                )
    return bad


def test_imports_go_down_the_layers():
    assert not layer_violations(package_sources(REPO), LAYERS)


def lazy_package_imports(source: str) -> list:
    """Lines of the imports of package modules inside function bodies."""
    found = []
    for fn in ast.walk(ast.parse(source)):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for node in ast.walk(fn):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
                if isinstance(node, ast.ImportFrom):
                    names = ["." if node.level else node.module or ""]
                if any(n == "." or n.split(".")[0] == PACKAGE_NAME for n in names):
                    found.append(node.lineno)
    return found


def test_no_lazy_import_of_the_package():
    """A lazy import is for an optional heavy dependency, never the package's (a hidden cycle)."""
    found = [f"{m}:{line}" for m, (source, _) in sorted(package_sources(REPO).items())
             for line in lazy_package_imports(source)]  # fmt: skip
    assert not found, found
    planted = "import os\ndef f():\n    import h5py\n    from electra_tf import run_dir\n"
    assert lazy_package_imports(planted) == [4]


def test_the_layers_are_the_documented_ones():
    with open(os.path.join(REPO, "docs", "ARCHITECTURE.md"), encoding="utf-8") as f:
        doc = f.read()
    section = doc.split("\n## Layers\n", 1)[1].split("\n## ", 1)[0]
    documented = [re.findall(r"`([a-z_]+)`", line.split(":", 1)[0])
                  for line in section.splitlines() if re.match(r"\d+\. ", line)]  # fmt: skip
    assert documented == LAYERS


def test_the_layer_check_can_fail(tmp_path):
    """On a synthetic package (every import form), and on run_dir.py with a planted import of
    a higher unit inside a function."""
    files = {
        "__init__.py": "",
        "low.py": "import os\n",
        "mid/__init__.py": "from electra_tf import low\n",
        "mid/a.py": "from . import b\nfrom .. import low\n",
        "mid/b.py": "def f():\n    import electra_tf.top.x\n",
        "top/__init__.py": "",
        "top/x.py": "from electra_tf.mid import a\n",
        "top/y.py": "def g():\n    from ..mid.a import f\n    from ...elsewhere import h\n",
        "stray.py": "",
    }
    for name, text in files.items():
        path = tmp_path / PACKAGE_NAME / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    sources = package_sources(str(tmp_path))
    layers = [["low"], ["mid"], ["top"]]
    assert layer_violations(sources, layers) == [
        "electra_tf.mid.b:2: mid (layer 2) imports top (layer 3)",
        "electra_tf.stray: unit stray has no layer",
    ]
    flat = [["low", "mid", "top", "stray"]]  # one layer: no unit may import another
    assert len(layer_violations(sources, flat)) == 5  # mid->low twice, mid->top, top->mid twice
    real = package_sources(REPO)
    source, is_package = real["electra_tf.run_dir"]
    planted = source + "\n\ndef f():\n    from electra_tf.checkpoint import restore\n"
    real["electra_tf.run_dir"] = (planted, is_package)
    line = planted.count("\n")
    assert layer_violations(real, LAYERS) == [
        f"electra_tf.run_dir:{line}: run_dir (layer 4) imports checkpoint (layer 14)"
    ]


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


# -- the data directory's layout has one owner ----------------------------------------------------
LAYOUT_OWNER = "electra_tf/data_layout.py"
# the names of a data directory's parts (`electra_tf.data_layout`), as whole path components
LAYOUT_NAMES = ("vocab.txt", "pretrain_tfrecords", "finetuning_data", "pretrain_data.tfrecord",
                ".build_incomplete", "ckpt")  # fmt: skip


def _docstrings(tree) -> set:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                out.add(id(body[0].value))
    return out


def layout_spellings(source: str) -> list:
    """(line, text) of each string literal that spells a part of the data directory's layout:
    one of LAYOUT_NAMES as a path component (alone, or before `/`, `*` or `-`), or "models" as
    an argument of `os.path.join`. Docstrings and dict keys (the `pretrain_tfrecords` hparam)
    do not count."""
    tree = ast.parse(source)
    skip = _docstrings(tree)
    skip |= {id(k) for n in ast.walk(tree) if isinstance(n, ast.Dict) for k in n.keys if k}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and ast.unparse(node.func) == "os.path.join":
            found += [(a.lineno, "models") for a in node.args
                      if isinstance(a, ast.Constant) and a.value == "models"]  # fmt: skip
        if not (isinstance(node, ast.Constant) and isinstance(node.value, str)) or id(node) in skip:
            continue
        for part in node.value.replace("\\", "/").split("/"):
            for name in LAYOUT_NAMES:
                if part == name or (part.startswith(name) and part[len(name)] in "*-"):
                    found.append((node.lineno, node.value))
    return found


def checked_files() -> list:
    """The package, the top-level scripts, and every script under experiments/, scripts/ and
    bench/ (relative paths): what the one-owner checks read (tests may build fixtures by hand)."""
    files = [os.path.relpath(p, REPO) for p in modules().values()]
    files += sorted(f for f in os.listdir(REPO) if f.endswith(".py"))
    for directory in ("experiments", "scripts", "bench"):
        for root, _, names in sorted(os.walk(os.path.join(REPO, directory))):
            files += [os.path.relpath(os.path.join(root, f), REPO) for f in sorted(names)
                      if f.endswith(".py")]  # fmt: skip
    return files


# the fingerprint and the behaviour pin are run at other commits (before data_layout.py existed,
# or across refactors of the package) through their command lines only: they spell the layout as a
# user would, on purpose
LAYOUT_EXEMPT = (LAYOUT_OWNER, "scripts/behaviour_fingerprint.py", "scripts/check_behaviour.py")


def layout_checked_files() -> list:
    return [f for f in checked_files() if f not in LAYOUT_EXEMPT]


def test_the_data_directory_layout_is_spelt_only_by_its_owner():
    offenders = []
    for rel in layout_checked_files():
        with open(os.path.join(REPO, rel), encoding="utf-8") as f:
            offenders += [f"{rel}:{line}: {text!r}" for line, text in layout_spellings(f.read())]
    assert not offenders, offenders


def test_the_layout_check_can_fail():
    source = '''"""Reads DATA_DIR/vocab.txt."""
import os
a = os.path.join(d, "vocab.txt")
b = os.path.join(d, "pretrain_tfrecords", "pretrain_data.tfrecord*")
c = d + "/finetuning_data/sst"
e = os.path.join(d, "models", name)
f = "models"  # not a path
g = "my_vocab.txt.bak"
h = {"pretrain_tfrecords": a}
'''
    assert sorted(line for line, _ in layout_spellings(source)) == [3, 4, 4, 5, 6]
    assert "run_pretraining.py" in layout_checked_files()
    assert "experiments/efficiency.py" in layout_checked_files()
    assert "electra_tf/finetune/config.py" in layout_checked_files()


# -- one owner each: the training loops' checkpoint manager, and the signal handlers -----------
OWNERS = {
    "CheckpointManager": "electra_tf/checkpoint/manager.py",
    "signal handler": "electra_tf/train/preemption.py",
}


def owned_calls(source: str) -> list:
    """(line, what) of each call that constructs a `tf.train.CheckpointManager` or installs a
    signal handler (`signal.signal`), however the name was imported."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        func = ast.unparse(node.func)
        if func == "CheckpointManager" or func.endswith(".CheckpointManager"):
            found.append((node.lineno, "CheckpointManager"))
        elif func in ("signal.signal", "signal"):
            found.append((node.lineno, "signal handler"))
    return found


def test_checkpoint_managers_and_signal_handlers_only_in_their_owners():
    offenders = []
    for rel in checked_files():
        with open(os.path.join(REPO, rel), encoding="utf-8") as f:
            offenders += [f"{rel}:{line}: {what}" for line, what in owned_calls(f.read())
                          if OWNERS[what] != rel]  # fmt: skip
    assert not offenders, offenders
    for what, owner in OWNERS.items():  # the owners are where the check expects them
        with open(os.path.join(REPO, owner), encoding="utf-8") as f:
            assert what in [w for _, w in owned_calls(f.read())], owner


def test_the_owner_check_can_fail():
    planted = """import signal
import tensorflow as tf
from tensorflow.train import CheckpointManager
m = tf.train.CheckpointManager(ckpt, d, 2)
n = CheckpointManager(ckpt, d, 2)
signal.signal(signal.SIGTERM, handler)
tf.train.Checkpoint(model=m).write(p)
"""
    assert owned_calls(planted) == [(4, "CheckpointManager"), (5, "CheckpointManager"),
                                    (6, "signal handler")]  # fmt: skip
    assert "bench/gpu_check.py" in checked_files() and "scripts/hparams_doc.py" in checked_files()
    assert "experiments/pilot/embeddings_transfer/shuffle_embedding_rows.py" in checked_files()
