"""Two-stage training (paper §3.2, Figure 3 right): the generator alone with masked LM for the
first `two_stage_steps` steps; then the discriminator, initialised from the generator's weights
(the same size), trained with replaced token detection while the generator stays frozen.

What a stage trains: stage 1 the generator's variables and its head (the embeddings it shares
with the discriminator included: tied, they are the generator's input and output tables); stage
2 every other variable (the discriminator's encoder and heads). The other stage's variables get
no gradient, so the optimizer leaves them and their slots untouched (no weight decay either).
Each stage has its own learning-rate schedule (`optimization.StagedSchedule`).

The discriminator is initialised at the start of the first call of stage 2 (a call never spans
the boundary: `step.steps_in_call`), so the checkpoint saved at the boundary step holds the
state before it, and a run resumed there initialises it the same way: resuming is exact across
the boundary.
"""

from typing import Callable, List, Optional

from electra_tf.modeling.pretrainer import DISCRIMINATOR_STAGE, GENERATOR_STAGE
from electra_tf.optimization import ElectraSchedule, StagedSchedule


def learning_rate_schedule(o):
    """The original's schedule for the `OptimizerHparams` `o`; with two-stage training, one per
    stage (warmup and decay restart at the boundary)."""

    def schedule(steps):
        return ElectraSchedule(o.learning_rate, steps, o.num_warmup_steps, o.lr_decay_power)

    n = o.two_stage_steps
    if not n:
        return schedule(o.num_train_steps)
    return StagedSchedule(schedule(n), schedule(o.num_train_steps - n), n)


class TwoStage:
    """The stages of a two-stage run of `model` (an `ElectraPretrainer` whose generator is a
    network of the discriminator's size) with the switch at step `boundary`.

    Example:
        stages = TwoStage(model, 1000)
        stages.stage_at(999), stages.stage_at(1000)   # ("generator", "discriminator")
    """

    def __init__(self, model, boundary: int):
        self.model = model
        self.boundary = boundary
        generator_side = model.weights_of(["generator", "generator_predictions"])
        ids = {id(v) for v in generator_side}
        trainable = model.trainable_weights
        self._variables = {
            GENERATOR_STAGE: [v for v in trainable if id(v) in ids],
            DISCRIMINATOR_STAGE: [v for v in trainable if id(v) not in ids],
        }
        self._pairs = self._discriminator_pairs()

    def stage_at(self, step: int) -> str:
        return GENERATOR_STAGE if step < self.boundary else DISCRIMINATOR_STAGE

    def start_call(self, step: int, log: Callable[[str], None]) -> str:
        """The stage of the call of the step function starting at `step`; the first call of
        stage 2 first initialises the discriminator from the generator."""
        if step == self.boundary:
            copied = self.initialize_discriminator()
            log(
                f"step {step}: stage 2, the discriminator initialised from the generator "
                f"({copied} variables); the generator is frozen"
            )
        return self.stage_at(step)

    def variables(self, stage: str) -> List:
        """The trainable variables `stage` updates, in the model's order."""
        return self._variables[stage]

    def _discriminator_pairs(self):
        """(discriminator variable, generator variable) by path inside each network
        (`electra/encoder/layer_0/...` <- `generator/encoder/layer_0/...`); shared variables
        (tied embeddings) need no copy."""
        disc, gen = self.model.discriminator, self.model.generator
        prefix_d, prefix_g = disc.name + "/", gen.name + "/"
        by_path = {v.path[len(prefix_g) :]: v for v in gen.weights if v.path.startswith(prefix_g)}
        shared = {id(v) for v in gen.weights}
        pairs, unmatched = [], []
        for v in disc.weights:
            if id(v) in shared:
                continue
            source: Optional[object] = by_path.get(v.path[len(prefix_d) :])
            if source is None or tuple(source.shape) != tuple(v.shape):
                unmatched.append(v.path)
            else:
                pairs.append((v, source))
        if unmatched:
            raise ValueError(f"two-stage training: no generator variable for {unmatched[:3]}")
        return pairs

    def initialize_discriminator(self) -> int:
        """Copies the generator's weights into the discriminator's; returns how many."""
        for target, source in self._pairs:
            target.assign(source)
        return len(self._pairs)
