"""What a pretraining checkpoint holds, and saving / restoring it.

A checkpoint holds the model, the optimizer's slots and step counter, the global step, the loss
scale and its good-step counter, and each local replica's data-iterator position
(`iterator_0`, ...): a resumed run continues exactly where the saved one stopped. A checkpoint
left incomplete or damaged (a run killed while saving, a full disk) is skipped for the newest
complete one, and a save that finds the disk full ends with one line, losing nothing
(`electra_tf.checkpoint_files`).
"""

from typing import Optional, Sequence

import tensorflow as tf

from electra_tf import checkpoint_files, checkpoints
from electra_tf.run_dir import RunDirectory
from electra_tf.train.loss_scale import DynamicLossScale
from electra_tf.train.strategy import ReplicaLayout


class TrainingCheckpoint:
    """The checkpointed state of a run and its `tf.train.CheckpointManager`.

    Args:
        model, optimizer, step, loss_scale: the state to save.
        iterators: this worker's data iterators (empty for evaluation).
        run: the run directory; non-chief workers of a multi-worker run save to scratch
            directories inside it (saving is collective, so every worker must save).
        layout: this process's `ReplicaLayout`.
        max_to_keep: checkpoints kept (None or 0: all).
    """

    def __init__(
        self,
        model,
        optimizer,
        step: tf.Variable,
        loss_scale: DynamicLossScale,
        iterators: Sequence = (),
        run: Optional[RunDirectory] = None,
        layout: Optional[ReplicaLayout] = None,
        max_to_keep: Optional[int] = None,
    ):
        self.step = step
        items = dict(
            model=model,
            optimizer=optimizer,
            step=step,
            loss_scale=loss_scale.scale,
            good_steps=loss_scale.good_steps,
        )
        for i, it in enumerate(iterators):
            items[f"iterator_{i}"] = it
        self.checkpoint = tf.train.Checkpoint(**items)
        self.manager = None
        self.max_to_keep = max_to_keep or None
        if run is not None:
            directory = run.path
            if layout is not None and not layout.is_chief:
                directory = run.worker_dir(layout.task_id)
            self.manager = self._manager(directory)

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
        (and no longer counting) incomplete or damaged ones; its path, or None."""
        directory = self.manager.directory

        def restore(prefix: str) -> None:
            self.checkpoint.restore(prefix).assert_existing_objects_matched()

        found, skipped = checkpoint_files.restore_newest(
            directory, self.manager.checkpoints, restore, log
        )
        if skipped and found:
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


def warm_start(model, path: str, log) -> None:
    """Restores what matches from another checkpoint (e.g. a released model) and reports what it
    did not restore."""
    restored, missing = checkpoints.warm_start(model, path)
    log(f"warm start from {path}: restored {restored} variables")
    if missing:
        log(f"  not restored ({len(missing)}): {', '.join(missing[:20])}")
