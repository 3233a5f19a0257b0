"""The product apart from the experiments: nothing under electra_tf/ or the top-level scripts
imports the experiments, the tests or any other of the repository's own code outside the package;
bench/ and scripts/ import only the package (and the standard library, third-party packages and
their own directory's modules); nothing of these, nor experiments/, edits `sys.path`; and the
tracked model weights total at most 25 MB (the demo's one encoder; the experiments' encoders are
in git history). Each check is also shown catching a planted violation."""

import ast
import os
import shutil
import subprocess

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = "electra_tf"
WEIGHTS_LIMIT = 25 * 2**20  # bytes
# what a file of model weights is called: Hugging Face, Keras and keras-hub, TF checkpoints, torch
WEIGHT_SUFFIXES = (".safetensors", ".h5", ".hdf5", ".keras", ".ckpt", ".pt", ".pth", ".bin")


def _py_files(root: str, directory: str) -> list:
    """The .py files under ROOT/DIRECTORY (relative to ROOT), or ROOT's own with "."."""
    base = os.path.join(root, directory)
    if directory == ".":
        return sorted(f for f in os.listdir(root) if f.endswith(".py"))
    out = []
    for here, _, names in sorted(os.walk(base)):
        out += [os.path.relpath(os.path.join(here, f), root) for f in sorted(names)
                if f.endswith(".py")]  # fmt: skip
    return out


def local_names(root: str) -> set:
    """The top-level names the repository's own code could be imported by, other than through the
    package: its folders, its top-level scripts and the test modules (`harness`, `conftest`,
    `test_*`, imported by name when tests/ is on the path)."""
    names = {d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d))
             and not d.startswith(".")}  # fmt: skip
    names |= {f[:-3] for f in _py_files(root, ".")}
    if os.path.isdir(os.path.join(root, "tests")):
        names |= {f[:-3] for f in os.listdir(os.path.join(root, "tests")) if f.endswith(".py")}
    return names - {PACKAGE}


def imports(source: str) -> list:
    """(line, top-level name) of every absolute import, inside functions too."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name.split(".")[0]) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module.split(".")[0]))
    return found


def sys_path_uses(source: str) -> list:
    """Lines that read or edit `sys.path` (`sys.path...`, `from sys import path`)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.Attribute) and node.attr == "path"
                and isinstance(node.value, ast.Name) and node.value.id == "sys"):  # fmt: skip
            found.append(node.lineno)
        elif isinstance(node, ast.ImportFrom) and node.module == "sys":
            found += [node.lineno for a in node.names if a.name == "path"]
    return sorted(found)


def boundary_violations(root: str) -> list:
    """ "FILE:LINE: what" for each import across the boundary and each use of sys.path."""
    local = local_names(root)
    checked = {}  # file -> the local names it may not import
    for rel in _py_files(root, PACKAGE) + _py_files(root, "."):
        checked[rel] = local
    for directory in ("bench", "scripts"):
        own = {os.path.basename(f)[:-3] for f in _py_files(root, directory)}
        for rel in _py_files(root, directory):
            checked[rel] = local - own
    out = []
    for rel, forbidden in checked.items():
        with open(os.path.join(root, rel), encoding="utf-8") as f:
            source = f.read()
        out += [f"{rel}:{line}: imports {name}" for line, name in imports(source)
                if name in forbidden]  # fmt: skip
    for rel in [*checked, *_py_files(root, "experiments")]:
        with open(os.path.join(root, rel), encoding="utf-8") as f:
            out += [f"{rel}:{line}: sys.path" for line in sys_path_uses(f.read())]
    return out


def is_weights(path: str) -> bool:
    """A model-weights file by its name: WEIGHT_SUFFIXES, `*.weights.*`, TF checkpoint data."""
    name = os.path.basename(path)
    return (name.endswith(WEIGHT_SUFFIXES) or ".weights." in name
            or ".data-0" in name or name.endswith(".index"))  # fmt: skip


def tracked_weights(root: str) -> list:
    """(path, bytes) of each tracked model-weights file in ROOT's git checkout."""
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=root, capture_output=True, check=True)
    paths = [p for p in listed.stdout.decode().split("\0") if p and is_weights(p)]
    return [(p, os.path.getsize(os.path.join(root, p))) for p in paths
            if os.path.exists(os.path.join(root, p))]  # fmt: skip


def test_the_product_imports_no_research_code_and_no_one_edits_sys_path():
    assert boundary_violations(REPO) == []


def test_tracked_model_weights_total_at_most_25_mb():
    if not os.path.isdir(os.path.join(REPO, ".git")) and not os.path.isfile(
        os.path.join(REPO, ".git")
    ):
        pytest.skip("not a git checkout")
    weights = tracked_weights(REPO)
    total = sum(size for _, size in weights)
    assert total <= WEIGHTS_LIMIT, f"{total / 2**20:.1f} MB of tracked weights: {weights}"
    # the demo's encoder is the one set kept (the check reads the files it is meant to)
    assert [p for p, _ in weights] == ["data/demo/electra_1e14/model.safetensors"]


# -- the checks catch what they are for ---------------------------------------------------------


def test_the_import_and_sys_path_checks_catch_planted_violations():
    planted = """import os
import sys
import experiments.transfer
from tests import harness
from harness import TINY_RUN
import numpy as np
from electra_tf import data_layout
from . import sibling
sys.path.insert(0, "experiments")


def f():
    import test_keras_hub
    from sys import path
    return sys.path
"""
    assert imports(planted) == [(1, "os"), (2, "sys"), (3, "experiments"), (4, "tests"),
                                (5, "harness"), (6, "numpy"), (7, "electra_tf"),
                                (13, "test_keras_hub"), (14, "sys")]  # fmt: skip
    assert sys_path_uses(planted) == [9, 14, 15]


def test_the_tree_check_catches_a_planted_violation_in_each_place(tmp_path):
    root = tmp_path / "repo"
    for d in ("electra_tf/demo", "experiments", "tests", "bench", "scripts"):
        (root / d).mkdir(parents=True)
    (root / "electra_tf" / "__init__.py").write_text("")
    (root / "electra_tf" / "demo" / "run.py").write_text("from experiments import transfer\n")
    (root / "run_x.py").write_text("import os\nfrom electra_tf import demo\nimport harness\n")
    (root / "tests" / "harness.py").write_text("")
    (root / "experiments" / "__init__.py").write_text("")
    (root / "experiments" / "x.py").write_text("import sys\nsys.path.append('.')\n")
    (root / "bench" / "step_common.py").write_text("import numpy\n")
    (root / "bench" / "train_step.py").write_text("import step_common\nimport run_x\n")
    (root / "scripts" / "tool.py").write_text("def f():\n    from tests.harness import X\n")
    assert sorted(boundary_violations(str(root))) == [
        "bench/train_step.py:2: imports run_x",
        "electra_tf/demo/run.py:1: imports experiments",
        "experiments/x.py:2: sys.path",
        "run_x.py:3: imports harness",
        "scripts/tool.py:2: imports tests",
    ]


def test_the_weights_check_catches_planted_weights(tmp_path):
    if shutil.which("git") is None:
        pytest.skip("no git")
    root = str(tmp_path)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(git + ["init", "-q"], cwd=root, check=True)
    sizes = {"a/model.safetensors": 20 * 2**20, "b/model.weights.h5": 6 * 2**20,
             "c/ckpt-1.data-00000-of-00001": 1000, "c/ckpt-1.index": 10, "d/notes.txt": 30 * 2**20,
             "untracked.safetensors": 40 * 2**20}  # fmt: skip
    for path, size in sizes.items():
        os.makedirs(os.path.dirname(os.path.join(root, path)) or root, exist_ok=True)
        with open(os.path.join(root, path), "wb") as f:
            f.truncate(size)  # sparse: the size without the writes
    subprocess.run(git + ["add", "a", "b", "c", "d"], cwd=root, check=True)
    weights = dict(tracked_weights(root))
    assert weights == {p: s for p, s in sizes.items() if p[0] in "abc"}
    assert sum(weights.values()) == 26 * 2**20 + 1010 > WEIGHTS_LIMIT  # the check would fail
