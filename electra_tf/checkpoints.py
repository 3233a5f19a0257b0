"""Reading checkpoints: this project's object-based ones and the original's name-based TF1 ones."""

import os
from typing import List, Tuple

import tensorflow as tf

from electra_tf.errors import UserError


def resolve_checkpoint(path: str) -> str:
    """A checkpoint prefix from a prefix or a directory (its latest checkpoint)."""
    if os.path.isdir(path):
        latest = tf.train.latest_checkpoint(path)
        if latest is None:
            raise UserError(f"{path}: directory holds no checkpoint")
        return latest
    if not tf.io.gfile.exists(path + ".index"):
        raise UserError(f"{path}: no such checkpoint (no {path}.index)")
    return path


def is_object_based(prefix: str) -> bool:
    names = tf.train.load_checkpoint(prefix).get_variable_to_shape_map()
    return "_CHECKPOINTABLE_OBJECT_GRAPH" in names


def restore_discriminator(encoder, path: str) -> str:
    """Loads the discriminator encoder from a pretraining checkpoint of this project or an
    original TF1 checkpoint; returns the checkpoint prefix used."""
    prefix = resolve_checkpoint(path)
    if is_object_based(prefix):
        ckpt = tf.train.Checkpoint(model=tf.train.Checkpoint(discriminator=encoder))
        ckpt.restore(prefix).expect_partial().assert_existing_objects_matched()
    else:
        restored, missing = restore_by_name(encoder.weights, prefix)
        if missing:
            raise UserError(f"{prefix}: missing variables {', '.join(missing[:10])}")
    return prefix


def restore_by_name(variables, prefix: str) -> Tuple[int, List[str]]:
    """Assigns every variable whose path is a name in a name-based checkpoint (the original's
    names equal this project's variable paths); returns (count restored, paths not found)."""
    reader = tf.train.load_checkpoint(prefix)
    shapes = reader.get_variable_to_shape_map()
    restored, missing = 0, []
    for v in variables:
        name = v.path
        if name not in shapes:
            missing.append(name)
            continue
        if list(shapes[name]) != list(v.shape):
            raise UserError(
                f"{prefix}: variable {name} has shape {shapes[name]}, the model expects "
                f"{list(v.shape)}"
            )
        v.assign(reader.get_tensor(name))
        restored += 1
    return restored, missing


def warm_start(model, path: str) -> Tuple[int, List[str]]:
    """Restores what matches from another checkpoint; returns (count, paths not restored)."""
    prefix = resolve_checkpoint(path)
    if is_object_based(prefix):
        ckpt = tf.train.Checkpoint(model=model)
        status = ckpt.restore(prefix).expect_partial()
        status.assert_existing_objects_matched()
        return len(model.weights), []
    return restore_by_name(model.weights, prefix)
