"""The ELECTRA pretrainer: mask -> generate -> sample -> discriminate.

The generator and discriminator are encoders built separately and passed in; the objective
(`electra_tf.objectives`) owns the masking fractions, the heads on the discriminator side, the
losses and the metrics (the split of TF Model Garden's pretrainer and task).
"""

from typing import Any, Dict, Optional

import keras
import numpy as np
import tensorflow as tf

from electra_tf import masking
from electra_tf.modeling.encoder import TransformerEncoder
from electra_tf.modeling.heads import MaskedLMHead
from electra_tf.modeling.stages import DiscriminatorInputs, GeneratorOutputs
from electra_tf.modeling.two_tower import TwoTowerClozeGenerator

# purposes of the counter-based randomness (see masking.random_key)
RANDOM_MASKING = 0
RANDOM_SAMPLING = 1
UNIFORM, UNIGRAM = "uniform", "unigram"
# two-stage training (paper §3.2): what one stage trains
GENERATOR_STAGE, DISCRIMINATOR_STAGE = "generator", "discriminator"


class ElectraPretrainer(keras.Model):
    """Runs an objective's networks on a batch and returns its losses and statistics.

    Args:
        discriminator: the `TransformerEncoder` to pretrain (named "electra").
        generator: the generator encoder; None for the uniform / unigram generator; the
            discriminator itself for a fully tied generator or a masked-LM objective; a
            `TwoTowerClozeGenerator` (Electric's): it runs on the unmasked input, its head is
            `cloze_predictions` over every position, and the cloze loss over the candidate
            positions replaces the masked-LM loss, as the original's `two_tower_generator`.
        objective: the `Objective` (losses, heads, masking fractions).
        special_ids: dict with "mask", "cls", "sep" (and optionally "pad") token ids.
        temperature: generator logits are divided by it before sampling.
        disallow_correct: never sample the original token (-1000 on its logit, as the original).
        uniform_generator: False, "uniform" (sample uniformly over the vocab, the original's
            `uniform_generator=true`), or "unigram" (sample from `unigram_counts`).
        unigram_counts: [V] token counts of the corpus, for `uniform_generator="unigram"`.
        tied_output_embeddings: every masked-LM head (the generator's, and the objective's own,
            e.g. replace_mlm's) projects onto its network's word table, as the original; False
            gives each head an output table of its own (the `tied_output_embeddings` hparam, or
            a Hugging Face generator saved untied).
        whole_word_masking: masking chooses whole words (`masking.mask_inputs`): a segmenter's
            words where the batch has `word_starts` (TFRecords built with --word_segmenter),
            else WordPiece's (`word_continuation`).
        word_continuation: bool [V], True for the `##` continuation pieces
            (`vocab.continuation_table`); None where nothing is masked (export).

    Example:
        model = ElectraPretrainer(disc, gen, objectives.build("electra"), special_ids)
        out = model.compute(batch, step=0, seed=0, training=True)   # out["loss"]
    """

    def __init__(
        self,
        discriminator: TransformerEncoder,
        generator: Optional[TransformerEncoder],
        objective: Any,
        special_ids: Dict[str, int],
        temperature: float = 1.0,
        disallow_correct: bool = False,
        uniform_generator=False,
        unigram_counts=None,
        tied_output_embeddings: bool = True,
        whole_word_masking: bool = False,
        word_continuation=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.discriminator = discriminator
        self.generator = generator
        self.two_tower = isinstance(generator, TwoTowerClozeGenerator)
        self.whole_word_masking = whole_word_masking
        self.word_continuation = None
        if word_continuation is not None:
            word_continuation = np.asarray(word_continuation, bool)
            if word_continuation.shape != (discriminator.config.vocab_size,):
                raise ValueError(
                    f"word_continuation has shape {word_continuation.shape}, not "
                    f"({discriminator.config.vocab_size},)"
                )
            self.word_continuation = word_continuation
        self.objective = objective
        self.special_ids = dict(special_ids)
        self.temperature = temperature
        self.disallow_correct = disallow_correct
        self.uniform_generator = UNIFORM if uniform_generator is True else uniform_generator
        self.vocab_size = discriminator.config.vocab_size
        self.unigram_logits = None
        if self.uniform_generator == UNIGRAM:
            if unigram_counts is None:
                raise ValueError('uniform_generator="unigram" needs unigram_counts')
            counts = np.asarray(unigram_counts, np.float64)
            if counts.shape != (self.vocab_size,):
                raise ValueError(
                    f"unigram_counts has shape {counts.shape}, not ({self.vocab_size},)"
                )
            # zero counts get a logit 1e4 below the others: probability 0, never sampled
            self.unigram_logits = np.where(
                counts > 0, np.log(np.maximum(counts, 1.0)), -1e4
            ).astype(np.float32)
        p = self.dtype_policy
        self.generator_predictions = None
        if generator is not None:
            head_name = {"name": "cloze_predictions"} if self.two_tower else {}
            self.generator_predictions = MaskedLMHead(
                generator.embeddings,
                generator.config.hidden_act,
                generator.config.initializer_range,
                tied_output=tied_output_embeddings,
                dtype=p,
                **head_name,
            )
        # one attribute per head: the attribute names are the checkpoint paths
        heads = objective.make_heads(
            discriminator, generator, dtype=p, tied_output=tied_output_embeddings
        )
        for name, layer in heads.items():
            setattr(self, name, layer)
        self._build_networks(heads)

    @property
    def mask_prob(self) -> float:
        return self.objective.mask_prob

    @property
    def max_predictions(self) -> int:
        return self.objective.max_predictions

    def weights_of(self, parts) -> list:
        """The distinct weights of the named attributes ("discriminator", "generator",
        "generator_predictions", "discriminator_predictions", ...), in that order."""
        out = []
        for part in parts:
            layer = getattr(self, part, None)
            if layer is not None:
                out += [w for w in layer.weights if all(w is not o for o in out)]
        return out

    def _build_networks(self, heads):
        # Built here, outside Keras's build() name scope, so variable paths are the original's
        # (`electra/...`, `generator/...`); the discriminator first so that shared embeddings
        # are `electra/embeddings/*`.
        self.discriminator.build()
        if self.generator is not None and not self.generator.built:
            self.generator.build()
        if self.generator_predictions is not None:
            width = self.generator.config.hidden_size
            if self.two_tower:
                width = self.generator.output_size
            self.generator_predictions.build((None, None, width))
        self.objective.build_heads(heads, self.discriminator, self.generator)

    def build(self, input_shape=None):
        self.built = True

    def call(self, inputs, training=False):
        return self.compute(inputs, step=0, seed=0, training=training)

    def denominators(self, inputs, step=0, seed=0) -> Dict[str, tf.Tensor]:
        """The objective's loss denominators for a batch (see `Objective.denominators`); with
        whole-word masking the masked-token count depends on the words drawn at (step, seed)."""
        if self.whole_word_masking:
            num = tf.reduce_sum(self.mask(inputs, step, seed).masked_lm_weights, axis=-1)
        else:
            num = masking.num_to_predict(inputs["input_mask"], self.mask_prob, self.max_predictions)
        dens = self.objective.denominators(inputs["input_mask"], num)
        if self.two_tower:  # the cloze loss covers every candidate position
            dens["cloze_weight_sum"] = tf.reduce_sum(tf.cast(self.candidates(inputs), tf.float32))
        return dens

    def candidates(self, inputs) -> tf.Tensor:
        """bool [B, L]: the positions masking may choose (real tokens but [CLS], [SEP], [MASK])."""
        s = self.special_ids
        return masking.candidates_mask(
            tf.cast(inputs["input_ids"], tf.int32),
            tf.cast(inputs["input_mask"], tf.int32),
            (s["cls"], s["sep"], s["mask"]),
        )

    def mask(self, inputs, step, seed) -> masking.MaskedInputs:
        """This objective's dynamic masking of a batch at a step."""
        input_ids = tf.cast(inputs["input_ids"], tf.int32)
        input_mask = tf.cast(inputs["input_mask"], tf.int32)
        s = self.special_ids
        continuation = word_starts = None
        if self.whole_word_masking and "word_starts" in inputs:  # a segmenter's words
            word_starts = tf.cast(inputs["word_starts"], tf.int32)
        elif self.whole_word_masking:
            if self.word_continuation is None:
                raise ValueError("whole_word_masking needs word_continuation (from the vocab)")
            continuation = tf.constant(self.word_continuation)
        return masking.mask_inputs(
            input_ids,
            input_mask,
            mask_prob=self.mask_prob,
            max_predictions=self.max_predictions,
            mask_id=s["mask"],
            special_ids=(s["cls"], s["sep"], s["mask"]),
            key=masking.random_key(seed, step, RANDOM_MASKING),
            example_ids=masking.content_keys(input_ids, input_mask),
            mask_token_fraction=self.objective.mask_token_fraction,
            random_token_fraction=self.objective.random_token_fraction,
            vocab_size=self.vocab_size,
            word_continuation=continuation,
            word_starts=word_starts,
        )

    def generator_logits(
        self, masked_ids, input_mask, segment_ids, positions, training=False, dropout_seed=None
    ):
        """Generator logits [B, N, V] (float32) at `positions`, and its hidden states there
        (None without a generator network)."""
        if self.generator is None:
            batch, n = tf.shape(positions)[0], tf.shape(positions)[1]
            if self.unigram_logits is not None:
                logits = tf.broadcast_to(
                    tf.constant(self.unigram_logits), [batch, n, self.vocab_size]
                )
            else:  # uniform generator: zero logits
                logits = tf.zeros([batch, n, self.vocab_size], tf.float32)
            return logits, None
        gen_hidden = self.generator(
            masked_ids, input_mask, segment_ids, training=training, dropout_seed=dropout_seed
        )
        gathered = masking.gather_positions(gen_hidden, positions)
        return self.generator_predictions(gathered), gathered

    def sampling_logits(self, mlm_logits, masked_lm_ids):
        """The logits the replacements are drawn from: the generator's over the temperature,
        -1000 on the original token (`disallow_correct`, as the original) and on the special
        tokens where the objective asks (so that its encoder never sees [MASK])."""
        logits = tf.cast(mlm_logits, tf.float32) / self.temperature
        vocab = self.vocab_size
        if self.disallow_correct:
            logits -= 1000.0 * tf.one_hot(masked_lm_ids, vocab, dtype=tf.float32)
        if self.objective.samples_avoid_special_tokens:
            s = self.special_ids
            ids = [s[k] for k in ("cls", "sep", "mask", "pad") if k in s]
            logits -= 1000.0 * tf.reduce_sum(tf.one_hot(ids, vocab, dtype=tf.float32), 0)
        return logits

    def compute(
        self,
        inputs: Dict[str, tf.Tensor],
        step,
        seed,
        training: bool = False,
        dropout_seed=None,
        global_denominators: Optional[Dict[str, tf.Tensor]] = None,
        with_eval_stats: bool = False,
        stage: Optional[str] = None,
    ) -> Dict[str, tf.Tensor]:
        """Losses (and metric sufficient statistics) for one batch.

        Masking and sampling randomness is keyed by (seed, step, example content) and dropout by
        `dropout_seed`. Returns "loss" (the objective's total, normalised by
        `global_denominators`, by default this batch's own), plus sums for metrics. `stage`
        (two-stage training, paper §3.2): "generator" stops after the generator's loss (the
        discriminator does not run), "discriminator" leaves the generator's loss out of it.
        """
        input_ids = tf.cast(inputs["input_ids"], tf.int32)
        input_mask = tf.cast(inputs["input_mask"], tf.int32)
        segment_ids = tf.cast(inputs["segment_ids"], tf.int32)
        example_ids = masking.content_keys(input_ids, input_mask)
        dens = global_denominators or self.denominators(inputs, step, seed)
        masked = self.mask(inputs, step, seed)
        seeds = _split_seed(dropout_seed, 2) if training else (None, None)
        if self.two_tower:  # generate: the cloze model on the unmasked inputs
            gen = self.cloze_outputs(inputs, masked, training, seeds[0])
        else:  # generate: the generator (masked LM) on the masked inputs
            mlm_logits, gen_hidden = self.generator_logits(
                masked.input_ids,
                input_mask,
                segment_ids,
                masked.masked_lm_positions,
                training=training,
                dropout_seed=seeds[0],
            )
            gen = GeneratorOutputs(
                masked,
                mlm_logits,
                gen_hidden,
                has_network=self.generator is not None,
                mlm_loss_in_total=self.unigram_logits is None,
            )
        total, out = self.objective.generator_loss(gen, dens, with_eval_stats)
        if not self.objective.samples_replacements or stage == GENERATOR_STAGE:
            out["loss"] = total
            return out
        if stage == DISCRIMINATOR_STAGE:  # two-stage training: the generator is frozen
            total = 0.0
        # sample: every masked position (including the 15% left unmasked) gets a sample
        policy_logits = self.sampling_logits(gen.mlm_logits, masked.masked_lm_ids)
        sampled = masking.categorical_sample(
            policy_logits, masking.random_key(seed, step, RANDOM_SAMPLING), example_ids
        )
        fake_ids, updated = masking.scatter_update(input_ids, sampled, masked.masked_lm_positions)
        labels = updated  # Electric: every sampled position is a noise sample
        if not self.objective.labels_every_sampled_position:
            labels = updated * tf.cast(fake_ids != input_ids, tf.int32)
        # discriminate
        disc_hidden = self.discriminator(
            fake_ids, input_mask, segment_ids, training=training, dropout_seed=seeds[1]
        )
        disc = DiscriminatorInputs(
            input_ids, input_mask, policy_logits, sampled, fake_ids, labels, disc_hidden
        )
        total, disc_out = self.objective.discriminator_loss(
            self, gen, disc, dens, total, with_eval_stats
        )
        out.update(disc_out)
        out["loss"] = total
        return out

    def cloze_outputs(self, inputs, masked: masking.MaskedInputs, training, dropout_seed):
        """The two-tower generator's outputs: cloze logits [B, L, V] over every position of the
        unmasked input (the generator never sees [MASK]), gathered at the masked positions for
        sampling and the masked-LM metrics, as the original's `_get_cloze_outputs`."""
        input_ids = tf.cast(inputs["input_ids"], tf.int32)
        hidden = self.generator(
            input_ids,
            tf.cast(inputs["input_mask"], tf.int32),
            tf.cast(inputs["segment_ids"], tf.int32),
            training=training,
            dropout_seed=dropout_seed,
        )
        cloze_logits = self.generator_predictions(hidden)
        positions = masked.masked_lm_positions
        return GeneratorOutputs(
            masked,
            masking.gather_positions(cloze_logits, positions),
            masking.gather_positions(hidden, positions),
            has_network=True,
            mlm_loss_in_total=True,
            cloze_logits=cloze_logits,
            cloze_ids=input_ids,
            cloze_weights=tf.cast(self.candidates(inputs), tf.float32),
        )

    def metrics_from_sums(self, sums: Dict[str, np.ndarray]) -> Dict[str, float]:
        """The objective's eval metrics from statistics summed over batches."""
        return self.objective.metrics(sums)


def _split_seed(seed, n):
    if seed is None:
        return (None,) * n
    seed = tf.cast(seed, tf.int32)
    return tuple(tf.stack([seed[0], seed[1] * (n + 1) + i + 1]) for i in range(n))
