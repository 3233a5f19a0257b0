"""The paper's objective and generator variants: each trains, and its defining property holds."""

import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf
from harness import REPO, TINY, VOCAB, make_synthetic_batch

from electra_tf import masking, run_dir
from electra_tf.electra_mlm import ElectraMLMScorer, electra_mlm_probs
from electra_tf.errors import UserError
from electra_tf.objectives.all_tokens_mlm import all_tokens_log_probs
from electra_tf.optimization import ElectraAdamW, dense_gradients
from electra_tf.pretraining_config import PretrainingConfig


def _train(model, steps=3):
    variables = model.trainable_weights
    opt = ElectraAdamW(1e-3, variables)
    before = [v.numpy().copy() for v in variables]
    losses = []
    for step in range(steps):
        batch = make_synthetic_batch(step)
        with tf.GradientTape() as tape:
            loss = model.compute(batch, step=step, seed=0, training=True, dropout_seed=[0, step])[
                "loss"
            ]
        grads = tape.gradient(loss, variables)
        grads = dense_gradients(grads, variables)
        grads, _ = opt.clip(grads)
        opt.apply_gradients(grads)
        losses.append(float(loss))
    changed = sum(not np.array_equal(b, v.numpy()) for b, v in zip(before, variables))
    return losses, changed


class _Capture:
    """Records the token ids the discriminator encoder is called with."""

    def __init__(self, encoder):
        self.ids = []
        original = encoder.call

        def call(input_ids, *args, **kwargs):
            self.ids.append(np.asarray(input_ids))
            return original(input_ids, *args, **kwargs)

        encoder.call = call


def _write_counts(path, counts):
    with open(path, "w") as f:
        f.write("".join(f"{c}\n" for c in counts))


def _unigram_counts():
    counts = np.zeros(VOCAB, np.int64)
    counts[110:120] = np.arange(1, 11) * 100  # ten tokens, probabilities 1/55 .. 10/55
    counts[101] = 5000  # [CLS]: a special token, must get count 0
    return counts


VARIANTS = {
    "electra": {},
    "mlm": dict(objective="mlm"),
    "electra_objective_false": dict(electra_objective=False),
    "electra_15": dict(objective="electra_15"),
    "replace_mlm": dict(objective="replace_mlm"),
    "all_tokens_mlm": dict(objective="all_tokens_mlm"),
    "uniform": dict(uniform_generator="uniform"),
    "unigram": dict(uniform_generator="unigram"),
    "fully_tied": dict(untied_generator=False, generator_hidden_size=1.0),
    "untied_embeddings": dict(untied_generator_embeddings=True),
    "generator_config": dict(generator_config={"hidden_size": 8, "num_hidden_layers": 1}),
    "adversarial": dict(adversarial_generator=True),
}


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_each_variant_trains_with_finite_losses_and_metrics(
    name, tmp_path, tiny_model, synthetic_batch
):
    hparams = dict(VARIANTS[name])
    if name == "unigram":
        _write_counts(tmp_path / "token_counts.txt", _unigram_counts())
        hparams["token_counts_file"] = str(tmp_path)
    config, model = tiny_model(**hparams)
    losses, changed = _train(model)
    assert all(math.isfinite(v) for v in losses), losses
    assert changed > 0
    out = model.compute(synthetic_batch(9), step=0, seed=0, with_eval_stats=True)
    metrics = model.metrics_from_sums({k: np.asarray(v, np.float64) for k, v in out.items()})
    assert all(np.isfinite(v) for v in metrics.values()), metrics
    # the masked-LM accuracy recomputed from the generator's own logits at the masked slots
    batch = synthetic_batch(9)
    m = model.mask(batch, 0, 0)
    logits, _ = model.generator_logits(
        m.input_ids, batch["input_mask"], batch["segment_ids"], m.masked_lm_positions
    )
    hits = (np.argmax(logits.numpy(), -1) == m.masked_lm_ids.numpy()) * m.masked_lm_weights.numpy()
    expected = hits.sum() / m.masked_lm_weights.numpy().sum()
    assert metrics["masked_lm_accuracy"] == pytest.approx(expected, abs=1e-9)


def test_untied_generator_embeddings_share_no_variables(tiny_model):
    _, tied = tiny_model()
    gen = {id(v) for v in tied.generator.weights + tied.generator_predictions.weights}
    disc = {id(v) for v in tied.discriminator.weights + tied.discriminator_predictions.weights}
    assert len(gen & disc) == 5  # word / position / token-type tables, embedding LayerNorm
    _, untied = tiny_model(untied_generator_embeddings=True)
    gen = {id(v) for v in untied.generator.weights + untied.generator_predictions.weights}
    disc = {id(v) for v in untied.discriminator.weights + untied.discriminator_predictions.weights}
    assert not gen & disc
    assert untied.generator.embeddings.word_embeddings.shape == (VOCAB, 16)  # E = gen hidden


def test_fully_tied_generator_is_the_discriminator_and_needs_equal_sizes(
    tiny_model, synthetic_batch
):
    _, model = tiny_model(untied_generator=False, generator_hidden_size=1.0)
    assert model.generator is model.discriminator
    paths = [v.path for v in model.trainable_weights]
    assert len(paths) == len(set(paths))
    assert not any(p.startswith("generator/") for p in paths)
    encoder = [p for p in paths if p.startswith("electra/")]
    assert len(encoder) == len(model.discriminator.weights)  # one set of encoder variables
    # the generator's MLM loss trains the discriminator's encoder layers
    with tf.GradientTape() as tape:
        out = model.compute(synthetic_batch(), step=0, seed=0)
    layer = model.discriminator.transformer_layers[-1].trainable_weights[0]
    assert tape.gradient(out["mlm_loss_sum"], layer) is not None
    with pytest.raises(UserError, match="generator_hidden_size=1.0"):
        PretrainingConfig.from_flat("t", "/x", {**TINY, "untied_generator": False})
    with pytest.raises(UserError, match="generator_layers=1.0"):
        PretrainingConfig.from_flat(
            "t",
            "/x",
            {
                **TINY,
                "untied_generator": False,
                "generator_hidden_size": 1.0,
                "generator_layers": 0.5,
            },
        )


def test_generator_config_overrides_the_derived_config(tiny_model):
    config, model = tiny_model(generator_config={"hidden_size": 8, "num_hidden_layers": 1})
    gen = model.generator.config
    assert (gen.hidden_size, gen.num_hidden_layers, gen.intermediate_size) == (8, 1, 32)
    assert gen.embedding_size == 16  # tied to the discriminator's
    with pytest.raises(UserError, match="embedding_size"):
        PretrainingConfig.from_flat(
            "t", "/x", {**TINY, "generator_config": {"embedding_size": 8}}
        ).model_configs(VOCAB)
    with pytest.raises(UserError, match="unknown key"):
        PretrainingConfig.from_flat(
            "t", "/x", {**TINY, "generator_config": {"hidden": 8}}
        ).model_configs(VOCAB)


def test_objective_validation():
    with pytest.raises(UserError, match="objective 'bert'"):
        PretrainingConfig.from_flat("t", "/x", dict(objective="bert"))
    with pytest.raises(UserError, match="electra_objective=false"):
        PretrainingConfig.from_flat(
            "t", "/x", dict(electra_objective=False, objective="replace_mlm")
        )
    with pytest.raises(UserError, match="adversarial_generator"):
        PretrainingConfig.from_flat("t", "/x", dict(objective="mlm", adversarial_generator=True))
    with pytest.raises(UserError, match="uniform_generator"):
        PretrainingConfig.from_flat("t", "/x", dict(uniform_generator="zipf"))


def _slot_replacements(model, batch, steps):
    """(original, replacement) of every masked slot whose position is unique in its row."""
    orig, repl = [], []
    for step in range(steps):
        m = model.mask(batch, step, 0)
        ids = batch["input_ids"].numpy()
        masked = m.input_ids.numpy()
        pos, w = m.masked_lm_positions.numpy(), m.masked_lm_weights.numpy()
        for b in range(ids.shape[0]):
            slots = pos[b][w[b] > 0]
            values, counts = np.unique(slots, return_counts=True)
            for p in values[counts == 1]:
                orig.append(ids[b, p])
                repl.append(masked[b, p])
    return np.array(orig), np.array(repl)


def test_mlm_objective_masks_80_10_10_and_electra_objective_false_85_15(
    tiny_model, synthetic_batch
):
    batch = synthetic_batch(0, batch=256, length=128, low=104)
    config, model = tiny_model(objective="mlm", max_seq_length=128)
    assert model.generator is model.discriminator
    assert getattr(model, "discriminator_predictions", None) is None
    orig, repl = _slot_replacements(model, batch, 2)
    n = len(orig)
    assert n > 5000
    masked = np.mean(repl == 103)
    kept = np.mean(repl == orig)
    random = np.mean((repl != 103) & (repl != orig))
    # a random token equals the original with probability 1/V
    assert abs(masked - 0.8) < 0.02 and abs(random - 0.1 * (1 - 1 / VOCAB)) < 0.015
    assert abs(kept - (0.1 + 0.1 / VOCAB)) < 0.015
    _, original = tiny_model(electra_objective=False, max_seq_length=128)
    orig, repl = _slot_replacements(original, batch, 2)
    assert np.all((repl == 103) | (repl == orig))  # no random tokens
    assert abs(np.mean(repl == 103) - 0.85) < 0.02


def test_electra_15_discriminator_loss_counts_only_masked_positions(tiny_model, synthetic_batch):
    _, model = tiny_model(objective="electra_15")
    batch = synthetic_batch(3)
    capture = _Capture(model.discriminator)
    out = model.compute(batch, step=2, seed=1, with_eval_stats=True)
    m = model.mask(batch, 2, 1)
    assert float(model.denominators(batch)["disc_weight_sum"]) == float(
        tf.reduce_sum(m.masked_lm_weights)
    )
    fake = capture.ids[-1]
    ids = batch["input_ids"].numpy()
    logits = model.discriminator_predictions(
        model.discriminator(tf.constant(fake), batch["input_mask"], batch["segment_ids"])
    ).numpy()
    pos, w = m.masked_lm_positions.numpy(), m.masked_lm_weights.numpy()
    expected = 0.0
    for b in range(ids.shape[0]):
        for n in range(pos.shape[1]):
            if w[b, n]:
                x, y = logits[b, pos[b, n]], float(fake[b, pos[b, n]] != ids[b, pos[b, n]])
                expected += max(x, 0) - x * y + np.log1p(np.exp(-abs(x)))
    np.testing.assert_allclose(out["disc_loss_sum"], expected, rtol=1e-4)
    assert float(out["disc_weight_sum"]) == w.sum()
    assert float(out["disc_weight_sum"]) < float(tf.reduce_sum(batch["input_mask"]))


def test_replace_mlm_inputs_have_no_mask_token(tiny_model, synthetic_batch):
    _, model = tiny_model(objective="replace_mlm")
    # make the generator prefer [MASK] overwhelmingly: it must still never be sampled
    bias = model.generator_predictions.output_bias
    bias.assign(tf.tensor_scatter_nd_update(bias, [[103]], [50.0]))
    batch = synthetic_batch(4)
    capture = _Capture(model.discriminator)
    out = model.compute(batch, step=0, seed=0)
    fake = capture.ids[-1]
    assert not np.any(fake == 103)
    m = model.mask(batch, 0, 0)
    assert np.any(m.input_ids.numpy() == 103)  # the generator did see [MASK]
    pos, w = m.masked_lm_positions.numpy(), m.masked_lm_weights.numpy()
    assert all(
        fake[b, p] not in (0, 101, 102, 103) for b, p in zip(*np.nonzero(w)) for p in [pos[b, p]]
    )
    assert float(out["disc_mlm_loss_sum"]) > 0 and "disc_loss_sum" not in out


def test_unigram_generator_samples_follow_corpus_counts(tmp_path, tiny_model, synthetic_batch):
    counts = _unigram_counts()
    _write_counts(tmp_path / "token_counts.txt", counts)
    _, model = tiny_model(
        uniform_generator="unigram",
        token_counts_file=str(tmp_path / "token_counts.txt"),
        max_seq_length=128,
    )
    assert model.generator is None
    batch = synthetic_batch(5, batch=64, length=128, low=104)
    capture = _Capture(model.discriminator)
    samples = []
    for step in range(3):
        model.compute(batch, step=step, seed=0)
        m = model.mask(batch, step, 0)
        pos, w = m.masked_lm_positions.numpy(), m.masked_lm_weights.numpy()
        for b in range(pos.shape[0]):
            values, c = np.unique(pos[b][w[b] > 0], return_counts=True)
            samples.extend(capture.ids[-1][b, values[c == 1]])
    samples = np.array(samples)
    assert len(samples) > 2000
    assert np.all((samples >= 110) & (samples < 120))  # never [CLS] nor an unseen token
    observed = np.bincount(samples - 110, minlength=10)
    expected = len(samples) * np.arange(1, 11) / 55.0
    chi2 = float(np.sum((observed - expected) ** 2 / expected))
    assert chi2 < 27.88, chi2  # chi-square, 9 degrees of freedom, p = 0.001


def test_uniform_generator_true_is_the_original_uniform(tiny_model, synthetic_batch):
    _, model = tiny_model(uniform_generator=True)
    assert model.generator is None and model.uniform_generator == "uniform"
    out = model.compute(synthetic_batch(), step=0, seed=0)
    np.testing.assert_allclose(
        out["mlm_loss_sum"] / out["mlm_weight_sum"], math.log(VOCAB), rtol=1e-5
    )


def test_all_tokens_log_probs_by_hand():
    logits = tf.constant([[[1.0, 2.0, 0.0], [0.0, 0.0, 3.0]]])  # [1, 2, V=3]
    copy = tf.constant([[0.5, -1.0]])
    inputs = tf.constant([[1, 0]])
    targets = tf.constant([[1, 2]])  # position 0: the input is the original; 1: replaced
    logp, d, _ = all_tokens_log_probs(logits, copy, inputs, targets)
    sm = np.exp(logits.numpy()) / np.exp(logits.numpy()).sum(-1, keepdims=True)
    d0, d1 = 1 / (1 + np.exp(-0.5)), 1 / (1 + np.exp(1.0))
    expected = [np.log(d0 + (1 - d0) * sm[0, 0, 1]), np.log((1 - d1) * sm[0, 1, 2])]
    np.testing.assert_allclose(logp.numpy()[0], expected, rtol=1e-6)
    np.testing.assert_allclose(d.numpy()[0], [d0, d1], rtol=1e-6)


def test_all_tokens_mlm_loss_covers_every_token_with_copy_probabilities(
    tiny_model, synthetic_batch
):
    _, model = tiny_model(objective="all_tokens_mlm")
    batch = synthetic_batch(6)
    capture = _Capture(model.discriminator)
    out = model.compute(batch, step=1, seed=2, with_eval_stats=True)
    fake = capture.ids[-1]
    hidden = model.discriminator(tf.constant(fake), batch["input_mask"], batch["segment_ids"])
    logits = model.discriminator_mlm_predictions(hidden).numpy().astype(np.float64)  # [B, L, V]
    d = 1 / (1 + np.exp(-model.copy_predictions(hidden).numpy().astype(np.float64)))
    sm = np.exp(logits - logits.max(-1, keepdims=True))
    sm /= sm.sum(-1, keepdims=True)
    ids = batch["input_ids"].numpy()
    mask = batch["input_mask"].numpy()
    p_orig = np.take_along_axis(sm, ids[..., None], -1)[..., 0]
    prob = d * (fake == ids) + (1 - d) * p_orig
    assert np.any(fake != ids)  # some tokens were replaced
    np.testing.assert_allclose(out["all_tokens_loss_sum"], -(mask * np.log(prob)).sum(), rtol=1e-4)
    assert float(out["disc_weight_sum"]) == mask.sum()  # every real token
    np.testing.assert_allclose(out["copy_prob_sum"], (mask * d).sum(), rtol=1e-4)
    mlm_den = float(out["mlm_weight_sum"]) + 1e-6
    expected = float(out["mlm_loss_sum"]) / mlm_den - (mask * np.log(prob)).sum() / (
        mask.sum() + 1e-6
    )
    np.testing.assert_allclose(out["loss"], expected, rtol=1e-4)


def test_adversarial_generator_gradient_is_reinforce_through_sample_log_probs(
    tiny_model, synthetic_batch
):
    _, model = tiny_model(adversarial_generator=True)
    batch = synthetic_batch(7)
    shared = {id(v) for v in model.discriminator.embeddings.weights}
    gen_vars = [
        v
        for v in model.generator.trainable_weights + model.generator_predictions.trainable_weights
        if id(v) not in shared
    ]
    disc_vars = [
        v
        for v in model.discriminator.trainable_weights
        + model.discriminator_predictions.trainable_weights
        if id(v) not in shared
    ]
    base_vars = model.generator_baseline.trainable_weights
    capture = _Capture(model.discriminator)
    with tf.GradientTape(persistent=True) as tape:
        out = model.compute(batch, step=0, seed=3, with_eval_stats=True)
    # by hand: the same masking, sampling and rewards, then sum (r - b) log p(sample)
    m = model.mask(batch, 0, 3)
    fake = capture.ids[-1]
    ids = batch["input_ids"].numpy()
    pos, w = m.masked_lm_positions.numpy(), m.masked_lm_weights.numpy()
    logits = model.discriminator_predictions(
        model.discriminator(tf.constant(fake), batch["input_mask"], batch["segment_ids"])
    ).numpy()
    x = np.take_along_axis(logits, pos, 1)
    y = (np.take_along_axis(fake, pos, 1) != np.take_along_axis(ids, pos, 1)).astype(np.float32)
    r = np.maximum(x, 0) - x * y + np.log1p(np.exp(-np.abs(x)))  # disc loss at the slot
    with tf.GradientTape() as tape2:
        gen_logits, hidden = model.generator_logits(
            m.input_ids, batch["input_mask"], batch["segment_ids"], m.masked_lm_positions
        )
        sampled = masking.categorical_sample(
            gen_logits,
            masking.random_key(3, 0, 1),
            masking.content_keys(batch["input_ids"], batch["input_mask"]),
        )
        b = tf.nn.softplus(-model.generator_baseline(hidden)).numpy()
        log_p = tf.gather(tf.nn.log_softmax(gen_logits), sampled, batch_dims=2)
        surrogate = -tf.reduce_sum(w * (r - b) * log_p)
    np.testing.assert_allclose(out["adv_loss_sum"], surrogate, rtol=1e-4)
    np.testing.assert_allclose(out["reward_sum"], (w * r).sum(), rtol=1e-4)
    got = tape.gradient(out["adv_loss_sum"], gen_vars)
    want = tape2.gradient(surrogate, gen_vars)
    for v, g1, g2 in zip(gen_vars, got, want):
        np.testing.assert_allclose(
            tf.convert_to_tensor(g1), tf.convert_to_tensor(g2), rtol=1e-3, atol=1e-6, err_msg=v.path
        )
    assert any(float(tf.norm(tf.convert_to_tensor(g))) > 0 for g in got)
    # the discriminator and the baseline get nothing from the REINFORCE loss
    assert all(g is None for g in tape.gradient(out["adv_loss_sum"], disc_vars + base_vars))
    # the baseline loss trains the baseline only
    assert all(g is None for g in tape.gradient(out["baseline_loss_sum"], gen_vars + disc_vars))
    assert all(g is not None for g in tape.gradient(out["baseline_loss_sum"], base_vars))
    # the MLM loss is not part of the total: the generator's gradient is REINFORCE's
    total = tape.gradient(out["loss"], gen_vars)
    for g1, g2 in zip(total, got):
        np.testing.assert_allclose(
            tf.convert_to_tensor(g1),
            tf.convert_to_tensor(g2) / (float(out["mlm_weight_sum"]) + 1e-6),
            rtol=1e-3,
            atol=1e-7,
        )
    metrics = model.metrics_from_sums({k: np.asarray(v, np.float64) for k, v in out.items()})
    assert 0 < metrics["generator_entropy"] <= math.log(VOCAB) + 1e-4


def test_appendix_g_score_matches_the_formula_by_hand():
    d = np.array([[0.9, 0.5, 0.1]])
    g = np.array([[0.2, 0.5, 0.3]])
    a = 0.85 / 0.15
    raw = d * g / (a * (1 - d) + g)
    np.testing.assert_allclose(electra_mlm_probs(d, g, 0.15), raw / raw.sum(), rtol=1e-6)
    # the derivation: with p = the true distribution, D from Bayes' rule gives p back
    p_true = np.array([[0.6, 0.3, 0.1]])
    pm = 0.15
    real = (1 - pm) * p_true + pm * g * p_true
    d_opt = real / ((1 - pm) * p_true + pm * g)
    np.testing.assert_allclose(electra_mlm_probs(d_opt, g, pm), p_true, rtol=1e-5)


def test_electra_mlm_scorer_runs_the_discriminator_on_each_candidate(tiny_model, synthetic_batch):
    _, model = tiny_model()
    batch = synthetic_batch(8)
    scorer = ElectraMLMScorer(model, top_k=5, max_sequences=7)  # several chunks
    sums = scorer.score_batch(batch)
    m = model.mask(batch, 0, 0)
    assert sums["num_predictions"] == float(tf.reduce_sum(m.masked_lm_weights))
    # appendix G by hand (numpy) over each slot's top-k candidates, with D from the scorer's
    # candidate pass (checked against a direct discriminator call below)
    prep = {k: v.numpy() for k, v in scorer._prepare(batch, 0, 0).items()}
    a = (1 - model.mask_prob) / model.mask_prob
    correct = 0
    for b, n in zip(*np.nonzero(prep["weights"] > 0)):
        d = scorer.candidate_disc_probs(
            prep["fake_ids"][b : b + 1],
            batch["input_mask"].numpy()[b : b + 1],
            batch["segment_ids"].numpy()[b : b + 1],
            prep["positions"][b : b + 1, n],
            prep["top_ids"][b : b + 1, n],
        )[0]
        g = prep["top_prob"][b, n]
        score = d * g / (a * (1 - d) + g)
        correct += prep["top_ids"][b, n][np.argmax(score)] == prep["targets"][b, n]
    assert sums["electra_mlm_correct"] == correct
    acc = ElectraMLMScorer.accuracies(sums)
    assert acc["electra_mlm_accuracy"] == correct / sums["num_predictions"]
    # the generator's accuracy is the eval metric's
    out = model.compute(batch, step=0, seed=0, with_eval_stats=True)
    assert sums["generator_correct"] == float(out["mlm_correct"])
    # a candidate's D equals running the discriminator on that one sequence
    ids = batch["input_ids"].numpy()[:2]
    cands = np.array([[120, 130, 140], [150, 160, 170]])
    positions = np.array([3, 4])
    d = scorer.candidate_disc_probs(
        ids, batch["input_mask"].numpy()[:2], batch["segment_ids"].numpy()[:2], positions, cands
    )
    seq = ids[1:2].copy()
    seq[0, 4] = 160
    logit = model.discriminator_predictions(
        model.discriminator(tf.constant(seq), batch["input_mask"][1:2], batch["segment_ids"][1:2])
    ).numpy()[0, 4]
    np.testing.assert_allclose(d[1, 1], 1 / (1 + np.exp(logit)), rtol=1e-5)


@pytest.mark.slow
def test_score_electra_mlm_command_on_a_saved_run(tmp_path, tiny_model, synthetic_batch):
    data_dir = tmp_path / "data"
    model_dir = data_dir / "models" / "run"
    rec_dir = data_dir / "pretrain_tfrecords"
    os.makedirs(model_dir)
    os.makedirs(rec_dir)
    vocab = ["[PAD]"] + [f"[unused{i}]" for i in range(100)] + ["[CLS]", "[SEP]", "[MASK]"]
    vocab += [f"w{i}" for i in range(VOCAB - len(vocab))]
    (data_dir / "vocab.txt").write_text("\n".join(vocab) + "\n")
    batch = synthetic_batch(0, batch=8)
    with tf.io.TFRecordWriter(str(rec_dir / "pretrain_data.tfrecord-0-of-1")) as writer:
        for i in range(8):
            feats = {
                k: tf.train.Feature(int64_list=tf.train.Int64List(value=batch[k].numpy()[i]))
                for k in ("input_ids", "input_mask", "segment_ids")
            }
            writer.write(
                tf.train.Example(features=tf.train.Features(feature=feats)).SerializeToString()
            )
    config, model = tiny_model()
    tf.train.Checkpoint(model=model).save(str(model_dir / "ckpt"))
    saved = {**config.to_flat(), "pretrain_tfrecords": None, "vocab_file": None, "model_dir": None}
    run_dir.write_run_config(
        str(model_dir / "config.json"), run_dir.PRETRAINING, saved, *config.model_configs(VOCAB)
    )
    result = subprocess.run(
        [
            sys.executable,
            os.path.join(REPO, "score_electra_mlm.py"),
            f"--data_dir={data_dir}",
            "--model_name=run",
            "--num_batches=1",
            "--batch_size=4",
            "--top_k=10",
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    got = json.loads((model_dir / "electra_mlm_results.json").read_text())
    assert got["num_batches"] == 1 and got["top_k"] == 10 and got["num_predictions"] > 0
    # the command scores the first 4 records with the saved model: as this process does
    first = {k: v[:4] for k, v in batch.items()}
    want = ElectraMLMScorer.accuracies(ElectraMLMScorer(model, top_k=10).score_batch(first))
    for key in ("electra_mlm_accuracy", "generator_mlm_accuracy", "target_in_top_k"):
        assert got[key] == pytest.approx(want[key], abs=1e-12), key
