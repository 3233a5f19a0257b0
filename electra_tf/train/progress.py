"""Progress output of a run: the log lines (loss, speed, FLOP rate, MFU, ETA) and TensorBoard
scalars (written with core TF ops, so training does not need the `tensorboard` package)."""

import time
from typing import Dict

import tensorflow as tf


def log(msg: str) -> None:
    print(msg, flush=True)


def fmt_time(seconds: float) -> str:
    seconds = int(seconds)
    h, rem = divmod(seconds, 3600)
    m, s = divmod(rem, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


def write_scalars(writer, values: Dict[str, float], step: int) -> None:
    """TensorBoard scalar summaries with core TF ops (no `tensorboard` package needed)."""
    metadata = tf.compat.v1.SummaryMetadata()
    metadata.plugin_data.plugin_name = "scalars"
    with writer.as_default(step=step):
        for name, value in values.items():
            tf.summary.write(name, tf.constant(float(value), tf.float32), metadata=metadata)
    writer.flush()


class ProgressLog:
    """Progress lines every `every` steps and at the last step, and their TensorBoard scalars,
    in one shape for every job: `step N/M loss L [figures] lr R | steps/s examples/s GFLOP/s
    MFU | ETA`. The loss and figures are the line's step's (as the original logs).

    Speed is measured over the steps since the previous line, never over the first step (which
    includes tracing and XLA compilation).

    Args:
        num_train_steps: the run's last step.
        every: `log_every_steps`.
        batch_size: examples per step (global).
        flops_per_step: the real FLOPs of one step (lookups as gathers, backward = 2x forward),
            for the FLOP rate and MFU.
        peak_flops: the device's peak FLOP/s (MFU's denominator).
        writer: a summary writer (a no-op writer on non-chief workers).
        log_prefix: before the compilation line (e.g. "trial 2: ").
    """

    def __init__(
        self, num_train_steps, every, batch_size, flops_per_step, peak_flops, writer, log_prefix=""
    ):
        self.num_train_steps = num_train_steps
        self.every = max(1, int(every))
        self.batch_size = batch_size
        self.flops_per_step = flops_per_step
        self.peak_flops = peak_flops
        self.writer = writer
        self.log_prefix = log_prefix
        self.start = self.window_start = time.time()
        self.window_steps = 0
        self.loss = float("nan")
        self.compiled = False

    def step_done(self, step: int, steps: int, losses) -> None:
        """Called after each call of the step function (`steps` steps, their `losses`); the
        first call marks the end of compilation."""
        self.loss = float(losses[-1])
        if not self.compiled:  # the first step includes tracing and XLA compilation
            log(
                f"{self.log_prefix}step {step}: compiled and ran the first step in "
                f"{time.time() - self.start:.1f}s"
            )
            self.start = self.window_start = time.time()
            self.compiled = True
            self.window_steps = 0
        else:
            self.window_steps += steps

    def due(self, step: int) -> bool:
        return step % self.every == 0 or step == self.num_train_steps

    def write(self, step: int, out, figures: Dict[str, float], total_flops: float) -> None:
        """The progress line and scalars of `step` (`out`: the step's outputs; `figures`: the
        task's own, printed after the loss)."""
        now = time.time()
        loss = self.loss
        lr = float(out["learning_rate"])
        head = f"step {step}/{self.num_train_steps} loss {loss:.4f}"
        head += "".join(f" {k} {v:.4f}" for k, v in figures.items()) + f" lr {lr:.2e}"
        scalars = {"loss": loss, "learning_rate": lr}
        if total_flops:
            scalars["train_flops"] = total_flops
        if self.window_steps:  # speed over the steps since the last line (not compilation)
            rate = self.window_steps / max(now - self.window_start, 1e-9)
            examples = rate * self.batch_size
            flops = rate * self.flops_per_step
            eta = (self.num_train_steps - step) / rate
            log(
                f"{head} | {rate:.2f} steps/s {examples:.1f} examples/s "
                f"{flops / 1e9:.1f} GFLOP/s (real) MFU {flops / self.peak_flops:.1%} "
                f"| ETA {fmt_time(eta)}"
            )
            scalars.update(
                steps_per_second=rate,
                examples_per_second=examples,
                flops_per_second=flops,
                mfu=flops / self.peak_flops,
            )
        else:
            log(head)
        self.window_start, self.window_steps = now, 0
        write_scalars(self.writer, scalars, step)

    def summary(self, start_step: int, step: int, total_flops: float) -> Dict[str, float]:
        """The training summary merged into eval_results.json."""
        elapsed = time.time() - self.start
        measured_steps = max(step - start_step - 1, 1)
        rate = measured_steps * self.flops_per_step / max(elapsed, 1e-9)
        return {
            "global_step": step,
            "train_flops": total_flops,
            "train_flops_per_second": rate,
            "train_mfu": rate / self.peak_flops,
            "peak_flops": self.peak_flops,
        }
