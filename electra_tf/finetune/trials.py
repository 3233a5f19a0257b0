"""The trials a fine-tuning run has finished, on disk, so that re-running the same command after
a crash does not redo them (`run_dir.RunDirectory.finetuning_state_path`).

Each finished trial is recorded, atomically, with everything the final results need: its info
(seed, steps, seconds), its metrics and label counts per task and split, and its predictions as
the lines they are written as. The record belongs to one run: the config (but the number of
trials and the logging and checkpoint intervals) and the pretrained checkpoint; a record of
another is set aside (`TASKS_trials.other_run.json`), saying so. The record is written before the
first trial starts, so that a trial's checkpoints are known to be this run's: those of another
run are removed, not resumed from. When every trial is done the results are written and the
record and the trials' checkpoints are removed.
"""

import contextlib
import json
import os
import re
import shutil
from typing import Any, Callable, Optional

from electra_tf.errors import UserError
from electra_tf.io_utils import read_json, write_json
from electra_tf.run_dir import RunDirectory
from electra_tf.run_lock import RunLock

# keys that may change between the first command and its re-run
_FREE_KEYS = ("num_trials", "log_every_steps", "save_checkpoints_steps")


class TrialRecord:
    """The finished trials of one run.

    Args:
        config: the run's `FinetuningConfig`.
        checkpoint: the pretrained checkpoint the trials start from (or None).
        log: where to say what was found.
        writer: false for a multi-worker run's other workers: they read the chief's record (to
            skip the same finished trials) and never write or remove anything.
    """

    def __init__(
        self,
        config,
        checkpoint: Optional[str],
        log: Callable[[str], None] = print,
        writer: bool = True,
    ):
        self.config = config
        self.writer = writer
        self.path = config.run.finetuning_state_path(config.task_names, config.random_init)
        run = {k: v for k, v in config.to_flat().items() if k not in _FREE_KEYS}
        self.key = {"config": run, "init_checkpoint": checkpoint}
        self.trials: dict[str, Any] = {}
        reused = False
        if not writer:
            if os.path.exists(self.path):
                d = read_json(self.path)
                if isinstance(d, dict) and _same(d.get("key"), self.key):
                    self.trials = d.get("trials") or {}
            return
        if os.path.exists(self.path):
            try:
                d = read_json(self.path)
            except UserError as e:  # written atomically: damaged by something else
                raise UserError(
                    f"{e}: the record of this run's finished trials is damaged; remove it to "
                    "run every trial again"
                ) from None
            if isinstance(d, dict) and _same(d.get("key"), self.key):
                reused = True
                self.trials = d.get("trials") or {}
                if self.trials:
                    log(
                        f"{self.path}: trial(s) {', '.join(sorted(self.trials, key=int))} already done"
                    )
            else:
                aside = RunDirectory.set_aside_path(self.path)
                os.replace(self.path, aside)
                log(
                    f"{self.path}: recorded by a run with another config or checkpoint: its "
                    f"trials are not reused (the record is kept as {aside})"
                )
        if not reused:
            # an unfinished trial's checkpoints belong to the record's run: not resumed from
            for directory in self._checkpoint_dirs():
                log(f"{directory}: an unfinished trial of another run: removed, not resumed")
                shutil.rmtree(directory)
            # recorded before any trial writes a checkpoint: whose they are
            write_json(self.path, {"key": self.key, "trials": self.trials})

    def _checkpoint_dirs(self) -> list:
        c = self.config
        sentinel = 987654321  # run_dir's name for trial N, with N matching any number
        parent, name = os.path.split(
            c.run.trial_checkpoint_dir(c.task_names, sentinel, c.random_init)
        )
        if not os.path.isdir(parent):
            return []
        pattern = re.escape(name).replace(str(sentinel), r"\d+")
        found = [f for f in os.listdir(parent) if re.fullmatch(pattern, f)]
        return [os.path.join(parent, f) for f in sorted(found)]

    def done(self, trial: int) -> Optional[dict]:
        return self.trials.get(str(trial))

    def record(self, trial: int, result: dict) -> dict:
        """Records a finished trial and removes its checkpoints; returns the result as it reads
        back (so that finished and recorded trials give the same final results)."""
        self.trials[str(trial)] = json.loads(json.dumps(result))
        if not self.writer:
            return self.trials[str(trial)]
        write_json(self.path, {"key": self.key, "trials": self.trials})
        self.remove_checkpoints(trial)
        return self.trials[str(trial)]

    def remove_checkpoints(self, trial: int) -> None:
        if not self.writer:
            return
        c = self.config
        directory = c.run.trial_checkpoint_dir(c.task_names, trial, c.random_init)
        if os.path.isdir(directory):
            shutil.rmtree(directory)
        parent = os.path.dirname(directory)
        if os.path.isdir(parent) and not os.listdir(parent):
            os.rmdir(parent)

    def finish(self) -> None:
        """Every trial is done and the results written: the record is no longer needed."""
        if not self.writer:
            return
        for trial in range(1, self.config.num_trials + 1):
            self.remove_checkpoints(trial)
        if os.path.exists(self.path):
            os.remove(self.path)


def _same(a: Any, b: Any) -> bool:
    """Equal as JSON would read them back (tuples are lists)."""
    return json.loads(json.dumps(a)) == json.loads(json.dumps(b))


def lock_tasks(config, log: Callable[[str], None] = print) -> contextlib.ExitStack:
    """Holds the model directory for fine-tuning each of the config's tasks (a lock file per task
    and random_init: `finetuning_TASK[_random_init].lock`): a second run of a task stops at once,
    naming the process; runs of other tasks, and pretraining, go on beside it (they write other
    files). The returned stack releases them."""
    stack = contextlib.ExitStack()
    suffix = "_random_init" if config.random_init else ""
    try:
        for name in sorted(set(config.task_names)):
            path = config.run.task_lock_path(name, config.random_init)
            what = f"run directory's {name}{suffix.replace('_', ' ')} fine-tuning"
            stack.enter_context(RunLock.acquire(path, what, log))
    except BaseException:
        stack.close()
        raise
    return stack
