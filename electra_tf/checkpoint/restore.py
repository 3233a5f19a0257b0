"""Reading checkpoints: this project's object-based ones and the original's name-based TF1 ones.

The original google-research checkpoints are name-based: each tensor is stored under its TF1
variable name (`electra/encoder/layer_3/attention/self/query/kernel`, ...). This project's layers
reproduce those names as their variables' `.path`, so loading one is a lookup by name (nothing is
transposed: kernels are [in, out] in both). This project's own checkpoints are object-based
(`tf.train.Checkpoint(model=pretrainer, optimizer=..., step=...)`); they are read by walking the
checkpoint's object graph alongside the model's, attribute by attribute.

A Hugging Face directory (or a "DISC_DIR,GEN_DIR" pair, `foreign_dirs.huggingface_dirs`) is read as
a name-based checkpoint: `electra_tf.huggingface.checkpoint` translates its tensors to the
original's names and layouts, and the name-based restore does the rest; so is a keras-hub
ElectraBackbone preset (`electra_tf.keras_hub.preset`, an encoder).

Either way every variable is checked before anything is assigned: a shape mismatch names the
variable and both shapes, and a variable the checkpoint lacks is an error unless the caller asked
for a partial restore (`warm_start`), which returns what it could not restore.
"""

import dataclasses
import os
from typing import Dict, Iterable, List, Optional, Tuple

import numpy as np
import tensorflow as tf
from tensorflow.core.protobuf import trackable_object_graph_pb2

from electra_tf.checkpoint import locate
from electra_tf.errors import UserError, listing, tf_message
from electra_tf.foreign_dirs import foreign_dirs
from electra_tf.huggingface.checkpoint import encoder_reader, pretrainer_reader
from electra_tf.huggingface.names import UNTIED_OUTPUT

OBJECT_GRAPH_KEY = "_CHECKPOINTABLE_OBJECT_GRAPH"
# Entries of original checkpoints that no network of this project holds.
OPTIMIZER_SUFFIXES = ("/adam_m", "/adam_v")
OPTIMIZER_NAMES = ("global_step",)
UNUSED_NAMES = ("generator_predictions/temperature",)
NETWORK_SCOPES = (
    "electra",
    "generator",
    "generator_predictions",
    "discriminator_predictions",
    # Electric's two-tower generator and its head
    "generator_ltr",
    "generator_rtl",
    "cloze_predictions",
)


def is_object_based(prefix: str) -> bool:
    """True for a TF2 `tf.train.Checkpoint`, False for a TF1 name-based checkpoint."""
    return OBJECT_GRAPH_KEY in tf.train.load_checkpoint(prefix).get_variable_to_shape_map()


def object_graph(prefix: str) -> trackable_object_graph_pb2.TrackableObjectGraph:
    graph = trackable_object_graph_pb2.TrackableObjectGraph()
    graph.ParseFromString(tf.train.load_checkpoint(prefix).get_tensor(OBJECT_GRAPH_KEY))
    return graph


def object_children(prefix: str, path: str = "") -> List[str]:
    """Names of the children of the object at `path` ("model", "model/discriminator", ...) in
    an object-based checkpoint; [] when there is no such object."""
    graph = object_graph(prefix)
    node = find_node(graph, path)
    return [] if node is None else [c.local_name for c in graph.nodes[node].children]


def find_node(graph, path: str) -> Optional[int]:
    """The id of the object at `path` ("model/discriminator") in an object graph, or None."""
    node = 0
    for part in [p for p in path.split("/") if p]:
        ids = {c.local_name: c.node_id for c in graph.nodes[node].children}
        if part not in ids:
            return None
        node = ids[part]
    return node


def original_category(name: str) -> str:
    """What an entry of an original checkpoint belongs to: "optimizer", "unused" or the network
    scope ("electra", "generator", ...); "other" for anything else (e.g. `task_specific/...`)."""
    if name in OPTIMIZER_NAMES or name.endswith(OPTIMIZER_SUFFIXES):
        return "optimizer"
    if name in UNUSED_NAMES:
        return "unused"
    scope = name.split("/", 1)[0]
    return scope if scope in NETWORK_SCOPES else "other"


@dataclasses.dataclass
class RestoreReport:
    """What a restore did. `restored`/`missing` are the model's variable paths; `skipped` counts
    checkpoint entries left unread, by kind; `unexpected` names those of no known kind."""

    prefix: str
    format: str  # "object" (this project's) or "original" (TF1 name-based)
    restored: List[str]
    missing: List[str]
    skipped: Dict[str, int]
    unexpected: List[str]

    def summary(self) -> str:
        kinds = ", ".join(f"{n} {k}" for k, n in sorted(self.skipped.items()) if n)
        text = f"{self.prefix} ({self.format} checkpoint): restored {len(self.restored)} variables"
        text += f"; skipped {sum(self.skipped.values())} checkpoint entries"
        text += f" ({kinds})" if kinds else ""
        if self.unexpected:
            text += f"; not used: {listing(self.unexpected)}"
        if self.missing:
            text += f"; not restored: {listing(self.missing)}"
        return text


def _unique(variables: Iterable) -> list:
    return list({id(v): v for v in variables}.values())


def _check_and_assign(prefix: str, pairs: List[Tuple[object, str, str]], shapes, reader) -> None:
    """Checks every (variable, checkpoint key, display name) pair's shape, then assigns all."""
    bad = [
        f"{name} is {list(shapes[key])} in the checkpoint but {list(v.shape)} in the model"
        for v, key, name in pairs
        if list(shapes[key]) != list(v.shape)
    ]
    if bad:
        raise UserError(
            f"{prefix}: {len(bad)} variable(s) disagree with the model config: {listing(bad)}"
        )
    for v, key, _ in pairs:
        v.assign(np.asarray(reader.get_tensor(key)).astype(v.dtype))


def _raise_missing(prefix: str, missing: List[str], what: str) -> None:
    raise UserError(
        f"{prefix}: {len(missing)} variable(s) of the {what} are not in the checkpoint: "
        f"{listing(missing)}"
    )


def restore_by_name(
    variables, prefix: str, strict: bool = True, what: str = "model", reader=None
) -> RestoreReport:
    """Loads each variable from the entry of a name-based (original) checkpoint named like its
    path. Shape mismatches always raise; absent names raise when `strict` (listing them all),
    else are returned in `missing`. `reader`: the checkpoint's tensors by name (default
    `tf.train.load_checkpoint(prefix)`; a Hugging Face directory's `TensorReader`)."""
    source = "original" if reader is None else getattr(reader, "format", "huggingface")
    reader = reader or tf.train.load_checkpoint(prefix)
    shapes = reader.get_variable_to_shape_map()
    pairs, missing = [], []
    for v in _unique(variables):
        (pairs.append((v, v.path, v.path)) if v.path in shapes else missing.append(v.path))
    if missing and strict:
        _check_and_assign(prefix, pairs, shapes, reader)  # shape errors first: more telling
        _raise_missing(prefix, missing, what)
    _check_and_assign(prefix, pairs, shapes, reader)
    used = {key for _, key, _ in pairs}
    skipped: Dict[str, int] = {}
    unexpected = []
    for name in sorted(shapes):
        if name in used:
            continue
        kind = original_category(name)
        kind = {"optimizer": "optimizer state", "unused": "unused"}.get(kind, kind)
        if kind == "other":
            unexpected.append(name)
        else:
            key = kind if kind in ("optimizer state", "unused") else "of other networks"
            skipped[key] = skipped.get(key, 0) + 1
    if unexpected:
        skipped["unknown"] = len(unexpected)
    return RestoreReport(prefix, source, [k for _, k, _ in pairs], missing, skipped, unexpected)


def _walk(graph, node: int, obj, path: str, found: Dict[int, Tuple[object, str, str]]) -> None:
    """Pairs the model's variables under `obj` with checkpoint keys under object-graph `node`."""
    proto = graph.nodes[node]
    for attr in proto.attributes:
        if attr.name == "VARIABLE_VALUE" and hasattr(obj, "assign"):
            found.setdefault(id(obj), (obj, attr.checkpoint_key, getattr(obj, "path", path)))
    children = tf.train.TrackableView.children(obj) if proto.children else {}
    for child in proto.children:
        if child.local_name in children:
            sub = children[child.local_name]
            _walk(graph, child.node_id, sub, f"{path}/{child.local_name}", found)


def restore_objects(
    roots: Dict[str, object], prefix: str, variables=None, strict: bool = True, what: str = "model"
) -> RestoreReport:
    """Restores from an object-based checkpoint: each `roots` entry maps an object path in the
    checkpoint ("model/discriminator") to the object of this process holding the same structure.
    `variables` (default: the roots' weights) are those that must be restored (when `strict`)."""
    reader = tf.train.load_checkpoint(prefix)
    shapes = reader.get_variable_to_shape_map()
    graph = object_graph(prefix)
    found: Dict[int, Tuple[object, str, str]] = {}
    for path, obj in roots.items():
        node = find_node(graph, path)
        if node is not None:
            _walk(graph, node, obj, path, found)
    if variables is None:
        variables = [w for obj in roots.values() for w in obj.weights]
    wanted = _unique(variables)
    pairs = [found[id(v)] for v in wanted if id(v) in found]
    missing = [v.path for v in wanted if id(v) not in found]
    if missing and strict:
        _check_and_assign(prefix, pairs, shapes, reader)
        _raise_missing(prefix, missing, what)
    _check_and_assign(prefix, pairs, shapes, reader)
    used = {key for _, key, _ in pairs}
    skipped: Dict[str, int] = {}
    for key in shapes:
        if key in used or key == OBJECT_GRAPH_KEY:
            continue
        kind = "optimizer state" if key.startswith("optimizer/") else "other objects"
        skipped[kind] = skipped.get(kind, 0) + 1
    return RestoreReport(prefix, "object", [p for _, _, p in pairs], missing, skipped, [])


def discriminator_object_path(prefix: str) -> str:
    """Where the discriminator encoder sits in an object-based checkpoint: `model/discriminator`
    (pretraining) or `model/encoder` (fine-tuning)."""
    children = object_children(prefix, "model")
    for name in ("discriminator", "encoder"):
        if name in children:
            return f"model/{name}"
    raise UserError(
        f"{prefix}: no discriminator in this checkpoint (its model holds: "
        f"{', '.join(children) or 'nothing'})"
    )


def restore_discriminator(encoder, path: str) -> str:
    """Loads the discriminator encoder (every variable, or an error) from a checkpoint of this
    project (pretraining or fine-tuning), an original TF1 one or a Hugging Face directory (the
    encoder of any of its architectures; a pair's discriminator); returns the prefix used."""
    prefix = locate.resolve_checkpoint(path)
    try:
        _restore_discriminator(encoder, prefix)
    except tf.errors.OpError as e:  # a flipped byte, a file cut short: TensorFlow's checksums
        raise damaged_checkpoint(prefix, e) from None
    return prefix


def damaged_checkpoint(prefix: str, e: Exception) -> UserError:
    """The one line for a checkpoint whose files do not read back."""
    return UserError(
        f"{prefix}: the checkpoint does not read back ({tf_message(e)}): it is damaged; use "
        "another one (an earlier checkpoint of its run)"
    )


def _restore_discriminator(encoder, prefix: str) -> None:
    if foreign_dirs(prefix):
        reader = encoder_reader(prefix)
        restore_by_name(encoder.weights, prefix, what="discriminator encoder", reader=reader)
    elif is_object_based(prefix):
        roots = {discriminator_object_path(prefix): encoder}
        restore_objects(roots, prefix, encoder.weights, what="discriminator encoder")
    else:
        restore_by_name(encoder.weights, prefix, what="discriminator encoder")


def warm_start(model, path: str) -> Tuple[int, List[str]]:
    """Restores the variables of `model` (an `ElectraPretrainer`) that the checkpoint holds,
    ours, an original one or Hugging Face directories (a discriminator's, a generator's, or
    "DISC_DIR,GEN_DIR" for both networks); returns (count restored, paths not restored). Shape
    mismatches raise."""
    prefix = locate.resolve_checkpoint(path)
    try:
        return _warm_start(model, prefix)
    except tf.errors.OpError as e:
        raise damaged_checkpoint(prefix, e) from None


def _warm_start(model, prefix: str) -> Tuple[int, List[str]]:
    if foreign_dirs(prefix):
        separate = model.generator is not None and model.generator is not model.discriminator
        tied = separate and model.generator.embeddings is model.discriminator.embeddings
        reader = pretrainer_reader(prefix, separate, tied)
        if UNTIED_OUTPUT in reader.tensors:
            raise UserError(
                f"{prefix}: tie_word_embeddings false: this project's pretraining generator "
                "ties its output layer to its word embeddings, so it cannot warm-start from it"
            )
        report = restore_by_name(model.weights, prefix, strict=False, reader=reader)
    elif is_object_based(prefix):
        report = restore_objects({"model": model}, prefix, model.weights, strict=False)
    else:
        report = restore_by_name(model.weights, prefix, strict=False)
    return len(report.restored), report.missing


def write_original_checkpoint(
    variables, prefix: str, global_step: Optional[int] = None
) -> List[str]:
    """Writes variables as a TF1 name-based checkpoint under their paths (the original's names),
    with the `checkpoint` state file beside it; returns the names written."""
    tensors = {v.path: tf.convert_to_tensor(v) for v in _unique(variables)}
    if len(tensors) != len(_unique(variables)):
        raise ValueError("two variables share a path")
    if global_step is not None:
        tensors["global_step"] = tf.constant(global_step, tf.int64)
    names = sorted(tensors)
    os.makedirs(os.path.dirname(prefix) or ".", exist_ok=True)
    tf.raw_ops.SaveV2(
        prefix=prefix,
        tensor_names=names,
        shape_and_slices=[""] * len(names),
        tensors=[tensors[n] for n in names],
    )
    # the `checkpoint` state file, so that the directory works as a checkpoint path too
    base = os.path.basename(prefix)
    with open(os.path.join(os.path.dirname(prefix) or ".", "checkpoint"), "w") as f:
        f.write(f'model_checkpoint_path: "{base}"\nall_model_checkpoint_paths: "{base}"\n')
    return names
