"""Checkpoint files on disk: whether a checkpoint is complete, the newest complete one of a
directory, restoring past broken ones, and saving so that a failed save loses nothing.

A run killed while it saves, a disk that fills up, or a file damaged afterwards leaves a
checkpoint whose index or data files are missing, truncated or fail their checksums. Such a
checkpoint is skipped, saying which and why, for the newest one before it; the broken files are
left where they are (a save at the same step replaces them) and are no longer counted among the
kept checkpoints, so they never push a good one out. `tf.train.CheckpointManager` deletes old
checkpoints only after a new one is complete; a save that fails for want of space removes its
own partial files and names the checkpoint that is still intact.
"""

import os
import re
from typing import Callable, List, Optional, Sequence, Tuple

import tensorflow as tf

from electra_tf.data_layout import CHECKPOINT_NAME, step_checkpoint
from electra_tf.errors import UserError, disk_full_error, is_disk_full, tf_message

# a checkpoint's files: PREFIX.index, PREFIX.data-I-of-N (PREFIX: ckpt-STEP, or any name, e.g.
# the "ckpt" of a kept fine-tuned model, "model.ckpt-1000000" of an original release)
_FILE = re.compile(r"^(.+)\.(index|data-\d{5}-of-\d{5})$")
# what reading a damaged checkpoint raises (IndexError: "Read less bytes than requested")
READ_ERRORS = (tf.errors.OpError, IndexError, ValueError)
_warned: set = set()


def _number(prefix: str) -> int:
    return int(re.search(r"-(\d+)$", prefix).group(1)) if re.search(r"-(\d+)$", prefix) else -1


def checkpoint_problem(prefix: str) -> Optional[str]:
    """Why the checkpoint at `prefix` is not complete (its index or a data file missing or
    unreadable, its data shorter than its index says), or None. Reads the index only; a flipped
    byte in the data shows when the data is read (`restore_newest`)."""
    name = os.path.basename(prefix)
    directory = os.path.dirname(prefix) or "."
    if not tf.io.gfile.exists(prefix + ".index"):
        return f"its index {name}.index is missing"
    data = [f for f in tf.io.gfile.listdir(directory) if f.startswith(name + ".data-")]
    if not data:
        return f"its data files ({name}.data-*) are missing"
    shards = int(data[0].rsplit("-of-", 1)[1])
    files = [f"{name}.data-{i:05d}-of-{shards:05d}" for i in range(shards)]
    missing = [f for f in files if f not in data]
    if missing:
        return f"its data file {missing[0]} is missing"
    try:
        reader = tf.train.load_checkpoint(prefix)
        dtypes = reader.get_variable_to_dtype_map()
        shapes = reader.get_variable_to_shape_map()
    except READ_ERRORS as e:
        return f"its index {name}.index is unreadable ({tf_message(e)})"
    need = 0
    for key, dtype in dtypes.items():
        if dtype not in (tf.string, tf.variant, tf.resource):
            count = 1
            for dim in shapes[key]:
                count *= dim
            need += count * dtype.size
    have = sum(tf.io.gfile.stat(os.path.join(directory, f)).length for f in files)
    if have < need:
        return f"its data is truncated ({have} bytes; its index lists at least {need})"
    return None


def candidates(
    directory: str, tracked: Sequence[str] = (), name: Optional[str] = None
) -> List[str]:
    """Every checkpoint prefix of `directory` (with a file there, or `tracked` by its state
    file; with `name`, only NAME-STEP ones), newest (highest step) first."""
    prefixes = set(tracked)
    if tf.io.gfile.isdir(directory):
        for f in tf.io.gfile.listdir(directory):
            m = _FILE.match(f)
            if m and (name is None or re.fullmatch(rf"{re.escape(name)}-\d+", m.group(1))):
                prefixes.add(os.path.join(directory, m.group(1)))
    return sorted(prefixes, key=lambda p: (_number(p), p), reverse=True)


def _warn(message: str, log: Callable[[str], None]) -> None:
    if message not in _warned:
        _warned.add(message)
        log(f"warning: {message}")


def restore_newest(
    directory: str,
    tracked: Sequence[str],
    restore: Callable[[str], None],
    log: Callable[[str], None],
) -> Tuple[Optional[str], List[str]]:
    """Restores the newest checkpoint of `directory` that is complete and reads back (`restore`
    raises on a damaged one); (its prefix or None, the prefixes skipped). A directory whose
    checkpoints are all broken is an error: starting over would overwrite them."""
    skipped: List[str] = []
    for prefix in candidates(directory, tracked, CHECKPOINT_NAME):  # what a resume may take
        why = checkpoint_problem(prefix)
        if why is None:
            try:
                restore(prefix)
                return prefix, skipped
            except READ_ERRORS as e:
                why = f"it does not read back ({tf_message(e)})"
        skipped.append(prefix)
        _warn(f"skipping checkpoint {prefix}: {why}; its files are left as they are", log)
    if skipped:
        raise UserError(
            f"{directory}: none of its {len(skipped)} checkpoints is complete (see the warnings "
            "above); move them away to start the run over"
        )
    return None, skipped


def untrack(directory: str, broken: Sequence[str], latest: str) -> None:
    """Rewrites `directory`'s checkpoint state file (atomically) without `broken`, with `latest`
    newest: a CheckpointManager made anew neither counts nor deletes the broken ones."""
    from google.protobuf import text_format

    state = tf.train.get_checkpoint_state(directory)
    if state is None:
        return
    paths = list(state.all_model_checkpoint_paths)
    stamps = list(state.all_model_checkpoint_timestamps)
    pairs = list(zip(paths, stamps if len(stamps) == len(paths) else [None] * len(paths)))
    kept = [(p, t) for p, t in pairs if p not in broken and p != latest]
    kept.append(next(((p, t) for p, t in pairs if p == latest), (latest, None)))

    def relative(path: str) -> str:  # as TensorFlow writes paths inside the directory
        inside = os.path.normpath(os.path.dirname(path)) == os.path.normpath(directory)
        return os.path.basename(path) if inside else path

    state.model_checkpoint_path = relative(latest)
    del state.all_model_checkpoint_paths[:]
    state.all_model_checkpoint_paths.extend(relative(p) for p, _ in kept)
    del state.all_model_checkpoint_timestamps[:]
    if all(t is not None for _, t in kept):
        state.all_model_checkpoint_timestamps.extend(t for _, t in kept)
    path = os.path.join(directory, "checkpoint")  # tf.train.CheckpointManager's state file
    tmp = path + ".tmp"
    with tf.io.gfile.GFile(tmp, "w") as f:
        f.write(text_format.MessageToString(state))
    tf.io.gfile.rename(tmp, path, overwrite=True)


def newest_complete(directory: str, log: Callable[[str], None]) -> Optional[str]:
    """The checkpoint a reader of `directory` should take: the state file's latest, else the
    highest-numbered, skipping (with a warning) those that are not complete; None if none."""
    state = tf.train.get_checkpoint_state(directory)
    first = [state.model_checkpoint_path] if state and state.model_checkpoint_path else []
    for prefix in first + [p for p in candidates(directory) if p not in first]:
        why = checkpoint_problem(prefix)
        if why is None:
            return prefix
        _warn(f"skipping checkpoint {prefix}: {why}", log)
    return None


def save(manager: tf.train.CheckpointManager, number: int) -> str:
    """`manager.save` at step `number`; a disk that fills up (or a file-size limit) is a
    `UserError` naming the checkpoint, after its partial files are removed: the previous
    checkpoints are untouched (CheckpointManager deletes old ones only after a save)."""
    prefix = step_checkpoint(manager.directory, number)
    existed = tf.io.gfile.exists(prefix + ".index") and checkpoint_problem(prefix) is None
    try:
        return manager.save(checkpoint_number=number, check_interval=False)
    except (tf.errors.OpError, OSError) as e:
        if not is_disk_full(e):
            raise
        _remove_partial(prefix, existed)
        kept = manager.latest_checkpoint
        raise disk_full_error(
            prefix,
            e,
            f"the last complete checkpoint {kept} is intact" if kept else "no checkpoint before",
        ) from None


def _remove_partial(prefix: str, keep_final: bool) -> None:
    """The files a failed save leaves: its temporary directory, and its final files unless they
    were a complete checkpoint before (a re-save at the same step writes to temporary files)."""
    directory, name = os.path.split(prefix)
    for f in tf.io.gfile.listdir(directory):
        path = os.path.join(directory, f.rstrip("/"))
        if f.rstrip("/").startswith(name + "_temp"):
            tf.io.gfile.rmtree(path) if tf.io.gfile.isdir(path) else tf.io.gfile.remove(path)
        elif not keep_final and (f == name + ".index" or f.startswith(name + ".data-")):
            tf.io.gfile.remove(path)
