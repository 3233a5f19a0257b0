"""ELECTRA's discriminator as a masked language model (paper appendix G).

A discriminator trained against a generator p_G, with masking probability p_mask, estimates at a
position t of context c the probability D(x, c) that the token x there is the original. Where a
fraction p_mask of the positions are masked and refilled with samples of p_G (a sample equal to
the original counting as original), Bayes' rule gives

    D = [(1 - p_mask)·p(x|c) + p_mask·p_G(x|c)·p(x|c)] / [(1 - p_mask)·p(x|c) + p_mask·p_G(x|c)]

and solving for the data distribution:

    p(x|c) ∝ D(x,c)·p_G(x|c) / (a·(1 - D(x,c)) + p_G(x|c)),   a = (1 - p_mask) / p_mask.

`ElectraMLMScorer` evaluates this over the generator's top-k candidates (100 by default): each
candidate is substituted at the masked position of the corrupted input (the other masked positions
hold generator samples, as the discriminator saw in training) and the discriminator is run on all
of them in batches, then the masked-LM accuracy of the normalised scores is compared with the
generator's own accuracy.
"""

from typing import Dict

import numpy as np
import tensorflow as tf

from electra_tf import masking
from electra_tf.modeling.pretrainer import RANDOM_SAMPLING, ElectraPretrainer


def electra_mlm_probs(disc_real_prob, gen_prob, mask_prob: float):
    """Appendix G: p(x|c) over candidates (last axis), normalised over them.

    Args:
        disc_real_prob: D(x, c), the discriminator's probability that x is the original token.
        gen_prob: p_G(x|c), the generator's probability of x.
        mask_prob: the masking probability the models were trained with.
    """
    a = (1.0 - mask_prob) / mask_prob
    d = tf.cast(disc_real_prob, tf.float32)
    g = tf.cast(gen_prob, tf.float32)
    score = d * g / (a * (1.0 - d) + g)
    return score / tf.reduce_sum(score, axis=-1, keepdims=True)


class ElectraMLMScorer:
    """Scores masked positions with the discriminator as a masked LM (paper appendix G).

    Args:
        model: a built `ElectraPretrainer` with a generator network and a discriminator head.
        top_k: candidates per masked position (the generator's most probable tokens).
        max_sequences: the most sequences per discriminator call (candidates are batched).

    Example:
        scorer = ElectraMLMScorer(model)
        sums = scorer.score_batch(batch)          # sums over the batch's masked slots
        ElectraMLMScorer.accuracies(sums)         # {"electra_mlm_accuracy": ..., ...}
    """

    def __init__(self, model: ElectraPretrainer, top_k: int = 100, max_sequences: int = 4096):
        if model.generator is None or getattr(model, "discriminator_predictions", None) is None:
            raise ValueError("the discriminator as a masked LM needs a generator network and RTD")
        self.model = model
        self.top_k = min(int(top_k), model.vocab_size)
        self.max_sequences = int(max_sequences)
        self._prepare = tf.function(self._prepare_fn)
        self._disc = tf.function(self._disc_real_prob)

    def _prepare_fn(self, inputs, step, seed):
        m = self.model
        input_ids = tf.cast(inputs["input_ids"], tf.int32)
        input_mask = tf.cast(inputs["input_mask"], tf.int32)
        segment_ids = tf.cast(inputs["segment_ids"], tf.int32)
        masked = m.mask(inputs, step, seed)
        logits, _ = m.generator_logits(
            masked.input_ids, input_mask, segment_ids, masked.masked_lm_positions
        )
        policy = m.sampling_logits(logits, masked.masked_lm_ids)
        sampled = masking.categorical_sample(
            policy,
            masking.random_key(seed, step, RANDOM_SAMPLING),
            masking.content_keys(input_ids, input_mask),
        )
        fake_ids, _ = masking.scatter_update(input_ids, sampled, masked.masked_lm_positions)
        gen_prob = tf.nn.softmax(logits)
        top_prob, top_ids = tf.math.top_k(gen_prob, k=self.top_k)
        return {
            "fake_ids": fake_ids,
            "positions": masked.masked_lm_positions,
            "targets": masked.masked_lm_ids,
            "weights": masked.masked_lm_weights,
            "generator_pred": tf.argmax(logits, -1, output_type=tf.int32),
            "top_prob": top_prob,
            "top_ids": top_ids,
        }

    def _disc_real_prob(self, ids, input_mask, segment_ids, positions):
        """D(real) at `positions` [S] of the sequences `ids` [S, L]."""
        m = self.model
        hidden = m.discriminator(ids, input_mask, segment_ids, training=False)
        logits = m.discriminator_predictions(hidden)  # [S, L], "replaced" logit
        at = tf.gather(logits, positions[:, tf.newaxis], batch_dims=1)[:, 0]
        return tf.sigmoid(-at)

    def candidate_disc_probs(self, fake_ids, input_mask, segment_ids, positions, candidates):
        """D(real) [B, K] for each candidate [B, K] substituted at positions [B] of fake_ids."""
        fake_ids = np.asarray(fake_ids)
        b, k = candidates.shape
        length = fake_ids.shape[1]
        seqs = np.repeat(fake_ids[:, None, :], k, axis=1)  # [B, K, L]
        seqs[np.arange(b)[:, None], np.arange(k)[None, :], np.asarray(positions)[:, None]] = (
            candidates
        )
        seqs = seqs.reshape(b * k, length)
        mask = np.repeat(np.asarray(input_mask), k, axis=0)
        seg = np.repeat(np.asarray(segment_ids), k, axis=0)
        pos = np.repeat(np.asarray(positions), k)
        out = []
        for start in range(0, b * k, self.max_sequences):
            sl = slice(start, start + self.max_sequences)
            out.append(
                self._disc(
                    tf.constant(seqs[sl], tf.int32),
                    tf.constant(mask[sl], tf.int32),
                    tf.constant(seg[sl], tf.int32),
                    tf.constant(pos[sl], tf.int32),
                ).numpy()
            )
        return np.concatenate(out).reshape(b, k)

    def score_batch(self, inputs: Dict[str, tf.Tensor], step=0, seed=0) -> Dict[str, float]:
        """Sums over the batch's masked slots: "num_predictions", "generator_correct",
        "electra_mlm_correct" and "target_in_top_k"."""
        p = {k: v.numpy() for k, v in self._prepare(inputs, step, seed).items()}
        input_mask = np.asarray(inputs["input_mask"])
        segment_ids = np.asarray(inputs["segment_ids"])
        sums = dict.fromkeys(
            ("num_predictions", "generator_correct", "electra_mlm_correct", "target_in_top_k"),
            0.0,
        )
        for n in range(p["positions"].shape[1]):
            w = p["weights"][:, n]
            rows = np.nonzero(w > 0)[0]
            if rows.size == 0:
                continue
            d = self.candidate_disc_probs(
                p["fake_ids"][rows],
                input_mask[rows],
                segment_ids[rows],
                p["positions"][rows, n],
                p["top_ids"][rows, n],
            )
            probs = electra_mlm_probs(d, p["top_prob"][rows, n], self.model.mask_prob).numpy()
            pred = p["top_ids"][rows, n][np.arange(rows.size), np.argmax(probs, -1)]
            target = p["targets"][rows, n]
            sums["num_predictions"] += float(rows.size)
            sums["generator_correct"] += float(np.sum(p["generator_pred"][rows, n] == target))
            sums["electra_mlm_correct"] += float(np.sum(pred == target))
            sums["target_in_top_k"] += float(np.sum(p["top_ids"][rows, n] == target[:, None]))
        return sums

    @staticmethod
    def accuracies(sums: Dict[str, float]) -> Dict[str, float]:
        n = max(sums["num_predictions"], 1.0)
        return {
            "electra_mlm_accuracy": sums["electra_mlm_correct"] / n,
            "generator_mlm_accuracy": sums["generator_correct"] / n,
            "target_in_top_k": sums["target_in_top_k"] / n,
            "num_predictions": int(sums["num_predictions"]),
        }
