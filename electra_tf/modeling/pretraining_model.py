"""The ELECTRA pretraining model: masking, generator, sampling, discriminator, losses, metrics.

The generator and discriminator are encoders built separately and passed in; this model owns
the objective (as TF Model Garden's pretrainer does).
"""

from typing import Dict, Optional

import keras
import numpy as np
import tensorflow as tf

from electra_tf import masking
from electra_tf.configs import OBJECTIVES
from electra_tf.modeling.encoder import TransformerEncoder
from electra_tf.modeling.heads import DiscriminatorHead, MaskedLMHead, ValueBaselineHead

# purposes of the counter-based randomness (see masking.random_key)
RANDOM_MASKING = 0
RANDOM_SAMPLING = 1
AUC_THRESHOLDS = 200

METRIC_NAMES = (
    "masked_lm_accuracy",
    "masked_lm_loss",
    "sampled_masked_lm_accuracy",
    "disc_loss",
    "disc_auc",
    "disc_accuracy",
    "disc_precision",
    "disc_recall",
)


def auc_thresholds(num_thresholds: int = AUC_THRESHOLDS) -> np.ndarray:
    """The thresholds of tf.metrics.auc: -eps, i/(n-1) for i in 1..n-2, 1+eps."""
    eps = 1e-7
    inner = [(i + 1) / (num_thresholds - 1) for i in range(num_thresholds - 2)]
    return np.array([0.0 - eps] + inner + [1.0 + eps], dtype=np.float32)


class ElectraPretrainer(keras.Model):
    """Replaced-token-detection pretraining, BERT's masked LM, and the paper's variants.

    `objective` (the `objective` hparam):
      * "electra": replaced token detection on every real token (the default, the original's).
      * "mlm": masked LM only, on the discriminator, with BERT's 80% [MASK] / 10% random /
        10% kept. (`electra_objective=False` is the original's masked LM: 85% [MASK] / 15% kept.)
      * "electra_15": as "electra", but the discriminator loss covers the masked positions only.
      * "replace_mlm": the masked positions hold generator samples instead of [MASK]; the
        discriminator encoder is trained with masked LM on them.
      * "all_tokens_mlm": as "replace_mlm", but the encoder predicts every token, with a copy
        mechanism: p(x_t) = D_t·1[x_t = input_t] + (1 - D_t)·softmax(logits_t)[x_t].

    Args:
        discriminator: the `TransformerEncoder` to pretrain (named "electra").
        generator: the generator encoder; None for the uniform / unigram generator; the
            discriminator itself for a fully tied generator or the masked-LM objective.
        special_ids: dict with "mask", "cls", "sep" (and optionally "pad") token ids.
        electra_objective: False is the original's masked LM (85% [MASK] / 15% kept).
        gen_weight, disc_weight: loss weights (1 and 50 in the original).
        mask_prob: fraction of tokens to mask; max_predictions: N slots per sequence.
        temperature: generator logits are divided by it before sampling.
        disallow_correct: never sample the original token.
        uniform_generator: False, True / "uniform" (sample uniformly over the vocab, the
            original's), or "unigram" (sample from `unigram_counts`).
        objective: see above.
        unigram_counts: [V] token counts of the corpus, for `uniform_generator="unigram"`.
        adversarial_generator: train the generator with REINFORCE to maximise the
            discriminator's loss (paper appendix F) instead of maximum likelihood.
    """

    def __init__(
        self,
        discriminator: TransformerEncoder,
        generator: Optional[TransformerEncoder],
        special_ids: Dict[str, int],
        electra_objective: bool = True,
        gen_weight: float = 1.0,
        disc_weight: float = 50.0,
        mask_prob: float = 0.15,
        max_predictions: int = 19,
        temperature: float = 1.0,
        disallow_correct: bool = False,
        uniform_generator=False,
        objective: str = "electra",
        unigram_counts=None,
        adversarial_generator: bool = False,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if objective not in OBJECTIVES:
            raise ValueError(f"objective {objective!r} is not one of {OBJECTIVES}")
        self.discriminator = discriminator
        self.generator = generator
        self.special_ids = dict(special_ids)
        # electra_objective=False is the original's masked LM (85/15 masking, no random tokens)
        self.objective = objective if electra_objective else "mlm"
        self.electra_objective = self.objective != "mlm"
        self.gen_weight = gen_weight
        self.disc_weight = disc_weight
        self.mask_prob = mask_prob
        self.max_predictions = max_predictions
        self.temperature = temperature
        self.disallow_correct = disallow_correct
        self.uniform_generator = "uniform" if uniform_generator is True else uniform_generator
        self.adversarial_generator = adversarial_generator
        self.vocab_size = discriminator.config.vocab_size
        if electra_objective and objective == "mlm":  # BERT's 80/10/10
            self.mask_token_fraction, self.random_token_fraction = 0.8, 0.1
        else:  # the original's 85% [MASK] / 15% kept
            self.mask_token_fraction, self.random_token_fraction = 0.85, 0.0
        self.unigram_logits = None
        if self.uniform_generator == "unigram":
            if unigram_counts is None:
                raise ValueError('uniform_generator="unigram" needs unigram_counts')
            counts = np.asarray(unigram_counts, np.float64)
            if counts.shape != (self.vocab_size,):
                raise ValueError(
                    f"unigram_counts has shape {counts.shape}, not ({self.vocab_size},)"
                )
            # zero counts get a logit far below any Gumbel noise: never sampled
            self.unigram_logits = np.where(
                counts > 0, np.log(np.maximum(counts, 1.0)), -1e4
            ).astype(np.float32)
        p = self.dtype_policy
        self.generator_predictions = None
        if generator is not None:
            self.generator_predictions = MaskedLMHead(
                generator.embeddings,
                generator.config.hidden_act,
                generator.config.initializer_range,
                dtype=p,
            )
        c = discriminator.config
        self.discriminator_predictions = None
        if self.objective in ("electra", "electra_15"):
            self.discriminator_predictions = DiscriminatorHead(
                c.hidden_size, c.hidden_act, c.initializer_range, dtype=p
            )
        self.discriminator_mlm_predictions = None
        if self.objective in ("replace_mlm", "all_tokens_mlm"):
            self.discriminator_mlm_predictions = MaskedLMHead(
                discriminator.embeddings,
                c.hidden_act,
                c.initializer_range,
                name="discriminator_mlm_predictions",
                dtype=p,
            )
        self.copy_predictions = None
        if self.objective == "all_tokens_mlm":
            self.copy_predictions = DiscriminatorHead(
                c.hidden_size, c.hidden_act, c.initializer_range, name="copy_predictions", dtype=p
            )
        self.generator_baseline = None
        if adversarial_generator:
            if generator is None or self.objective not in ("electra", "electra_15"):
                raise ValueError("adversarial_generator needs a generator and a discriminator")
            self.generator_baseline = ValueBaselineHead(generator.config.initializer_range, dtype=p)

        self._build_networks()

    def _build_networks(self):
        # Built here, outside Keras's build() name scope, so variable paths are the original's
        # (`electra/...`, `generator/...`); the discriminator first so that shared embeddings
        # are `electra/embeddings/*`.
        self.discriminator.build()
        if self.generator is not None and not self.generator.built:
            self.generator.build()
        if self.generator_predictions is not None:
            self.generator_predictions.build((None, None, self.generator.config.hidden_size))
        disc_shape = (None, None, self.discriminator.config.hidden_size)
        for head in (
            self.discriminator_predictions,
            self.discriminator_mlm_predictions,
            self.copy_predictions,
        ):
            if head is not None:
                head.build(disc_shape)
        if self.generator_baseline is not None:
            self.generator_baseline.build((None, None, self.generator.config.hidden_size))

    def build(self, input_shape=None):
        self.built = True

    def call(self, inputs, training=False):
        return self.compute(inputs, step=0, seed=0, training=training)

    def denominators(self, inputs) -> Dict[str, tf.Tensor]:
        """The sums that normalise the losses, known before the model runs (so that a global
        batch split over replicas or micro-batches is normalised exactly as a whole).

        "mlm_weight_sum": masked slots; "disc_weight_sum": the tokens the discriminator (or
        all-tokens MLM) loss covers: every real token, or the masked slots for electra_15.
        """
        num = masking.num_to_predict(inputs["input_mask"], self.mask_prob, self.max_predictions)
        mlm = tf.reduce_sum(tf.cast(num, tf.float32))
        return {
            "mlm_weight_sum": mlm,
            "disc_weight_sum": mlm
            if self.objective == "electra_15"
            else tf.reduce_sum(tf.cast(inputs["input_mask"], tf.float32)),
        }

    def mask(self, inputs, step, seed) -> masking.MaskedInputs:
        """This objective's dynamic masking of a batch at a step."""
        input_ids = tf.cast(inputs["input_ids"], tf.int32)
        input_mask = tf.cast(inputs["input_mask"], tf.int32)
        s = self.special_ids
        return masking.mask_inputs(
            input_ids,
            input_mask,
            mask_prob=self.mask_prob,
            max_predictions=self.max_predictions,
            mask_id=s["mask"],
            special_ids=(s["cls"], s["sep"], s["mask"]),
            key=masking.random_key(seed, step, RANDOM_MASKING),
            example_ids=masking.content_keys(input_ids, input_mask),
            mask_token_fraction=self.mask_token_fraction,
            random_token_fraction=self.random_token_fraction,
            vocab_size=self.vocab_size,
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
        -1000 on the original token (`disallow_correct`, as the original) and, for the
        replace-MLM objectives, on the special tokens (so the encoder never sees [MASK])."""
        logits = tf.cast(mlm_logits, tf.float32) / self.temperature
        vocab = self.vocab_size
        if self.disallow_correct:
            logits -= 1000.0 * tf.one_hot(masked_lm_ids, vocab, dtype=tf.float32)
        if self.objective in ("replace_mlm", "all_tokens_mlm"):
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
    ) -> Dict[str, tf.Tensor]:
        """Losses (and metric sufficient statistics) for one batch.

        Masking and sampling randomness is keyed by (seed, step, example content) and dropout by
        `dropout_seed`. Returns "loss" (the weighted total to minimise, normalised by
        `global_denominators`, by default this batch's own), plus sums for metrics.
        """
        input_ids = tf.cast(inputs["input_ids"], tf.int32)
        input_mask = tf.cast(inputs["input_mask"], tf.int32)
        segment_ids = tf.cast(inputs["segment_ids"], tf.int32)
        example_ids = masking.content_keys(input_ids, input_mask)
        dens = global_denominators or self.denominators(inputs)
        masked = self.mask(inputs, step, seed)
        seeds = _split_seed(dropout_seed, 2) if training else (None, None)
        weights = masked.masked_lm_weights
        mlm_den = dens["mlm_weight_sum"] + 1e-6

        # generator (masked LM) on the masked inputs
        mlm_logits, gen_gathered = self.generator_logits(
            masked.input_ids,
            input_mask,
            segment_ids,
            masked.masked_lm_positions,
            training=training,
            dropout_seed=seeds[0],
        )
        # -log softmax at the target id, without a [B, N, V] one-hot
        target_logit = tf.gather(mlm_logits, masked.masked_lm_ids, batch_dims=2)
        nll = tf.reduce_logsumexp(mlm_logits, axis=-1) - target_logit
        mlm_sum = tf.reduce_sum(weights * nll)
        out = {"mlm_loss_sum": mlm_sum, "mlm_weight_sum": tf.reduce_sum(weights)}
        # a generator trained by REINFORCE has no MLM loss; a unigram generator's is a constant
        # (huge for tokens absent from the counts), so it is reported but left out of the loss
        if self.adversarial_generator or self.unigram_logits is not None:
            total = 0.0
        else:
            total = self.gen_weight * mlm_sum / mlm_den
        if with_eval_stats:
            preds = tf.argmax(mlm_logits, -1, output_type=tf.int32)
            out["mlm_correct"] = tf.reduce_sum(
                weights * tf.cast(preds == masked.masked_lm_ids, tf.float32)
            )
            if self.generator is not None:
                out["generator_entropy_sum"] = tf.reduce_sum(weights * _entropy(mlm_logits))

        if self.objective == "mlm":
            out["loss"] = total
            return out

        policy_logits = self.sampling_logits(mlm_logits, masked.masked_lm_ids)
        sampled = masking.gumbel_sample(
            policy_logits, masking.random_key(seed, step, RANDOM_SAMPLING), example_ids
        )
        # every masked position (including the 15% left unmasked) gets a sample
        fake_ids, updated = masking.scatter_update(input_ids, sampled, masked.masked_lm_positions)
        labels = updated * tf.cast(fake_ids != input_ids, tf.int32)
        disc_hidden = self.discriminator(
            fake_ids, input_mask, segment_ids, training=training, dropout_seed=seeds[1]
        )
        if with_eval_stats:
            out["sampled_correct"] = tf.reduce_sum(
                weights * tf.cast(sampled == masked.masked_lm_ids, tf.float32)
            )

        if self.objective == "replace_mlm":
            gathered = masking.gather_positions(disc_hidden, masked.masked_lm_positions)
            d_logits = self.discriminator_mlm_predictions(gathered)
            d_target = tf.gather(d_logits, masked.masked_lm_ids, batch_dims=2)
            d_nll = tf.reduce_logsumexp(d_logits, axis=-1) - d_target
            out["disc_mlm_loss_sum"] = tf.reduce_sum(weights * d_nll)
            total += out["disc_mlm_loss_sum"] / mlm_den
            if with_eval_stats:
                d_preds = tf.argmax(d_logits, -1, output_type=tf.int32)
                out["disc_mlm_correct"] = tf.reduce_sum(
                    weights * tf.cast(d_preds == masked.masked_lm_ids, tf.float32)
                )
            out["loss"] = total
            return out

        if self.objective == "all_tokens_mlm":
            token_weights = tf.cast(input_mask, tf.float32)
            logp, copy_prob, preds = all_tokens_log_probs(
                self.discriminator_mlm_predictions(disc_hidden),
                self.copy_predictions(disc_hidden),
                fake_ids,
                input_ids,
            )
            out["all_tokens_loss_sum"] = -tf.reduce_sum(token_weights * logp)
            out["disc_weight_sum"] = tf.reduce_sum(token_weights)
            total += out["all_tokens_loss_sum"] / (dens["disc_weight_sum"] + 1e-6)
            if with_eval_stats:
                out["all_tokens_correct"] = tf.reduce_sum(
                    token_weights * tf.cast(preds == input_ids, tf.float32)
                )
                out["copy_prob_sum"] = tf.reduce_sum(token_weights * copy_prob)
            out["loss"] = total
            return out

        # replaced token detection: on every real token, or on the masked slots (electra_15)
        logits = self.discriminator_predictions(disc_hidden)  # [B, L] float32
        all_losses = tf.nn.sigmoid_cross_entropy_with_logits(
            labels=tf.cast(labels, tf.float32), logits=logits
        )
        if self.objective == "electra_15":
            pos = masked.masked_lm_positions
            logits = masking.gather_positions(logits, pos)
            labels = masking.gather_positions(labels, pos)
            token_weights = weights
            losses = masking.gather_positions(all_losses, pos) * token_weights
        else:
            token_weights = tf.cast(input_mask, tf.float32)
            losses = all_losses * token_weights
        disc_sum = tf.reduce_sum(losses)
        total += self.disc_weight * disc_sum / (dens["disc_weight_sum"] + 1e-6)
        out["disc_loss_sum"] = disc_sum
        out["disc_weight_sum"] = tf.reduce_sum(token_weights)
        if self.adversarial_generator:
            adv = self.adversarial_losses(
                policy_logits,
                sampled,
                gen_gathered,
                masking.gather_positions(all_losses, masked.masked_lm_positions),
                weights,
            )
            total += (self.gen_weight * adv["adv_loss_sum"] + adv["baseline_loss_sum"]) / mlm_den
            out.update(adv)
        if with_eval_stats:
            out.update(_disc_eval_stats(losses, token_weights, logits, labels))
        out["loss"] = total
        return out

    def adversarial_losses(self, policy_logits, sampled, gen_hidden, rewards, weights):
        """REINFORCE for the generator (paper appendix F), summed over the masked slots.

        The reward of a slot is the discriminator's loss at its position (-log D(real) for a
        token it should call original, -log D(replaced) otherwise), so the generator is trained to
        maximise it. The baseline b = -log sigmoid(w·h_G) is trained by cross-entropy towards the
        reward (target probability exp(-r)); it sees the generator's states through a stop-gradient.
        The generator's loss -(r - b)·log p_G(sample) has stop-gradients on r and b, so its gradient
        reaches the generator only through the log-probabilities of its samples.
        """
        r = tf.stop_gradient(rewards)
        baseline_logit = self.generator_baseline(tf.stop_gradient(gen_hidden))
        b = tf.nn.softplus(-baseline_logit)  # -log sigmoid
        baseline_loss = tf.nn.sigmoid_cross_entropy_with_logits(
            labels=tf.exp(-r), logits=baseline_logit
        )
        log_p = tf.gather(policy_logits, sampled, batch_dims=2) - tf.reduce_logsumexp(
            policy_logits, axis=-1
        )
        advantage = tf.stop_gradient(r - b)
        return {
            "adv_loss_sum": -tf.reduce_sum(weights * advantage * log_p),
            "baseline_loss_sum": tf.reduce_sum(weights * baseline_loss),
            "reward_sum": tf.reduce_sum(weights * r),
        }


def all_tokens_log_probs(mlm_logits, copy_logits, input_ids, target_ids):
    """All-Tokens MLM with the copy mechanism (paper §3.5), in float32.

    p(x_t) = D_t·1[x_t = input_t] + (1 - D_t)·softmax(mlm_logits_t)[x_t], with the copy
    probability D_t = sigmoid(copy_logit_t).
    Returns (log p(target) [B, L], D [B, L], the argmax of p [B, L]).
    """
    mlm_logits = tf.cast(mlm_logits, tf.float32)
    copy_logits = tf.cast(copy_logits, tf.float32)
    lse = tf.reduce_logsumexp(mlm_logits, axis=-1)
    log_softmax_target = tf.gather(mlm_logits, target_ids, batch_dims=2) - lse
    log_copy = tf.math.log_sigmoid(copy_logits)
    log_no_copy = tf.math.log_sigmoid(-copy_logits)
    generate = log_no_copy + log_softmax_target
    same = tf.equal(target_ids, input_ids)
    logp = tf.where(same, tf.experimental.numpy.logaddexp(log_copy, generate), generate)
    # argmax: the input token (copy + generate) against the best generated token
    copy_prob = tf.sigmoid(copy_logits)
    p_input = tf.exp(tf.gather(mlm_logits, input_ids, batch_dims=2) - lse)
    best = tf.argmax(mlm_logits, -1, output_type=tf.int32)
    p_best = tf.exp(tf.reduce_max(mlm_logits, -1) - lse)
    keep = copy_prob + (1.0 - copy_prob) * p_input >= (1.0 - copy_prob) * p_best
    preds = tf.where(keep, tf.cast(input_ids, tf.int32), best)
    return logp, copy_prob, preds


def _entropy(logits):
    """Entropy (nats) of softmax(logits) over the last axis."""
    logp = tf.nn.log_softmax(tf.cast(logits, tf.float32))
    return -tf.reduce_sum(tf.exp(logp) * logp, -1)


def _split_seed(seed, n):
    if seed is None:
        return (None,) * n
    seed = tf.cast(seed, tf.int32)
    return tuple(tf.stack([seed[0], seed[1] * (n + 1) + i + 1]) for i in range(n))


def _disc_eval_stats(losses, token_weights, logits, labels):
    per_example = tf.reduce_sum(losses, -1) / (1e-6 + tf.reduce_sum(token_weights, -1))
    labels_f = tf.cast(labels, tf.float32)
    preds = tf.cast(logits > 0, tf.float32)  # round((sign+1)/2): a zero logit is "real"
    correct = tf.cast(tf.equal(preds, labels_f), tf.float32) * token_weights
    probs = tf.sigmoid(logits) * token_weights  # padding counts as a negative with prob 0
    auc_labels = tf.reshape(labels_f * token_weights, [-1, 1])
    above = tf.cast(tf.reshape(probs, [-1, 1]) > auc_thresholds()[tf.newaxis, :], tf.float32)
    return {
        "disc_example_loss_sum": tf.reduce_sum(per_example),
        "num_examples": tf.cast(tf.shape(losses)[0], tf.float32),
        "disc_correct": tf.reduce_sum(correct),
        "disc_pred_pos": tf.reduce_sum(preds * token_weights),
        "disc_label_pos": tf.reduce_sum(labels_f * token_weights),
        "disc_true_pos": tf.reduce_sum(preds * labels_f * token_weights),
        "auc_tp": tf.reduce_sum(above * auc_labels, 0),
        "auc_fp": tf.reduce_sum(above * (1.0 - auc_labels), 0),
    }


def metrics_from_sums(s: Dict[str, np.ndarray]) -> Dict[str, float]:
    """The eight eval metrics of the original from summed statistics, plus those of the
    objective variants where their statistics are present."""
    mlm_n = s["mlm_weight_sum"]
    out = {
        "masked_lm_accuracy": float(s["mlm_correct"] / mlm_n),
        "masked_lm_loss": float(s["mlm_loss_sum"] / mlm_n),
    }
    if "sampled_correct" in s:
        out["sampled_masked_lm_accuracy"] = float(s["sampled_correct"] / mlm_n)
    if "generator_entropy_sum" in s:
        out["generator_entropy"] = float(s["generator_entropy_sum"] / mlm_n)
    if "disc_mlm_loss_sum" in s:  # replace_mlm
        out["disc_mlm_loss"] = float(s["disc_mlm_loss_sum"] / mlm_n)
        out["disc_mlm_accuracy"] = float(s["disc_mlm_correct"] / mlm_n)
    if "all_tokens_loss_sum" in s:  # all_tokens_mlm
        n = s["disc_weight_sum"]
        out["all_tokens_mlm_loss"] = float(s["all_tokens_loss_sum"] / n)
        out["all_tokens_mlm_accuracy"] = float(s["all_tokens_correct"] / n)
        out["copy_probability"] = float(s["copy_prob_sum"] / n)
    if "adv_loss_sum" in s:  # adversarial generator
        out["adversarial_reward"] = float(s["reward_sum"] / mlm_n)
        out["baseline_loss"] = float(s["baseline_loss_sum"] / mlm_n)
    if "disc_loss_sum" not in s:
        return out
    tp, fp = np.asarray(s["auc_tp"], np.float64), np.asarray(s["auc_fp"], np.float64)
    pos, neg = tp[0], fp[0]  # the lowest threshold (-eps) counts every example as positive
    tpr = tp / (pos + 1e-7)
    fpr = fp / (neg + 1e-7)
    auc = float(np.sum((fpr[:-1] - fpr[1:]) * (tpr[:-1] + tpr[1:]) / 2.0))
    out.update(
        disc_loss=float(s["disc_example_loss_sum"] / s["num_examples"]),
        disc_auc=auc,
        disc_accuracy=float(s["disc_correct"] / s["disc_weight_sum"]),
        disc_precision=float(s["disc_true_pos"] / max(s["disc_pred_pos"], 1e-12)),
        disc_recall=float(s["disc_true_pos"] / max(s["disc_label_pos"], 1e-12)),
    )
    return out


def load_unigram_counts(path: str, vocab_size: int, special_ids: Dict[str, int]) -> np.ndarray:
    """The unigram generator's token counts [V]: `path` is token_counts.txt, its directory, or
    the pretraining TFRecords pattern (then the token_counts.txt beside the first match).
    The special tokens ([CLS], [SEP], [MASK], [PAD]) get count 0: they are never sampled."""
    import os

    from electra_tf import pretraining_data
    from electra_tf.errors import UserError

    first = path.split(",")[0].strip()
    if not (tf.io.gfile.isdir(first) or os.path.basename(first) == "token_counts.txt"):
        first = os.path.dirname(first) or "."
    counts = pretraining_data.read_token_counts(first).astype(np.int64)
    if counts.shape != (vocab_size,):
        raise UserError(f"{first}: {counts.shape[0]} token counts for a vocab of {vocab_size}")
    for key in ("cls", "sep", "mask", "pad"):
        if key in special_ids:
            counts[special_ids[key]] = 0
    if counts.sum() <= 0:
        raise UserError(f"{first}: the token counts are all zero")
    return counts
