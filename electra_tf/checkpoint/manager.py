"""What a training checkpoint holds, and saving / restoring it (pretraining's and fine-tuning's).

What a checkpoint holds is the task's (`train.loop.TrainingTask.checkpoint_items`: pretraining's
model, optimizer, global step, loss scale and each local replica's data-iterator position, so a
resumed run continues exactly where the saved one stopped; a fine-tuning trial's); the training
loop's one `CheckpointManager` is here. A checkpoint
left incomplete or damaged (a run killed while saving, a full disk) is skipped for the newest
complete one, and a save that finds the disk full ends with one line, losing nothing
(`electra_tf.checkpoint.files`).
"""

from typing import Optional

import tensorflow as tf

from electra_tf.checkpoint import files as checkpoint_files
from electra_tf.checkpoint import restore


class CheckpointKeeper:
    """A `tf.train.Checkpoint` of `items` and the one `tf.train.CheckpointManager` of the
    training loop (`train.loop`): saves at the step's number, restores the newest
    complete checkpoint, skipping (and no longer counting) incomplete or damaged ones.

    Args:
        items: the objects to checkpoint, by name.
        step: the loop's step counter (a checkpoint's number).
        directory: where this process saves (None: no checkpoints).
        restore_from: where it resumes from, if not `directory` (a non-chief worker that saves
            to a scratch copy and resumes from the chief's); that directory is only read.
        max_to_keep: checkpoints kept (None or 0: all).
    """

    def __init__(
        self,
        items: dict,
        step: tf.Variable,
        directory: Optional[str],
        restore_from: Optional[str] = None,
        max_to_keep: Optional[int] = None,
    ):
        self.step = step
        self.checkpoint = tf.train.Checkpoint(**items)
        self.max_to_keep = max_to_keep or None
        self.manager = self._manager(directory) if directory is not None else None
        self.restore_from = restore_from

    def _manager(self, directory: str) -> tf.train.CheckpointManager:
        return tf.train.CheckpointManager(
            self.checkpoint,
            directory,
            max_to_keep=self.max_to_keep,
            checkpoint_name=checkpoint_files.CHECKPOINT_NAME,
        )

    @property
    def latest(self) -> Optional[str]:
        return self.manager.latest_checkpoint if self.manager else None

    def restore_latest(self, log=print) -> Optional[str]:
        """Restores the newest complete checkpoint (every saved object must match), skipping
        incomplete or damaged ones (in its own directory, they are no longer counted); its path,
        or None."""
        if self.manager is None:
            return None
        own = self.restore_from is None or self.restore_from == self.manager.directory
        directory = self.manager.directory if own else self.restore_from

        def restore_all(prefix: str) -> None:
            self.checkpoint.restore(prefix).assert_existing_objects_matched()

        tracked = self.manager.checkpoints if own else ()
        found, skipped = checkpoint_files.restore_newest(directory, tracked, restore_all, log)
        if own and skipped and found:
            checkpoint_files.untrack(directory, skipped, found)
            self.manager = self._manager(directory)
        return found

    def restore_for_eval(self, prefix: str) -> None:
        """Restores a checkpoint's model (and step), ignoring its training-only state."""
        self.checkpoint.restore(prefix).expect_partial()

    def save(self) -> str:
        """Saves under the current step's number (as the original: at multiples of
        `save_checkpoints_steps`, and at the end); once per step (a second call at the same step
        returns the checkpoint saved). A full disk is a `UserError` naming the checkpoint."""
        step = int(self.step.numpy())
        if self.latest and self.latest.endswith(f"-{step}"):
            return self.latest
        return checkpoint_files.save(self.manager, step)


def warm_start_and_log(model, path: str, log) -> None:
    """Restores what matches from another checkpoint (e.g. a released model) and reports what it
    did not restore."""
    restored, missing = restore.warm_start(model, path)
    log(f"warm start from {path}: restored {restored} variables")
    if missing:
        log(f"  not restored ({len(missing)}): {', '.join(missing[:20])}")
