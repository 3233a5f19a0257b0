"""Electric (the original's `electric_objective`): the two-tower cloze generator never sees the
token it predicts, the discriminator's logit shift and labels recomputed by hand, the small
model's parameter count, the original's variable names, and a run of run_pretraining.py."""

import json
import math
import os
import shutil

import keras
import numpy as np
import pytest
import tensorflow as tf
from harness import SPECIAL, TINY, TINY_RUN, VOCAB, run_script
from test_checkpoints import V, write_fake_original

from electra_tf import masking
from electra_tf.checkpoint import restore
from electra_tf.errors import UserError
from electra_tf.flops.analytic import TransformerFlops
from electra_tf.model_config import ModelConfig
from electra_tf.modeling.two_tower import TwoTowerClozeGenerator
from electra_tf.objectives import Electric
from electra_tf.pretraining_config import PretrainingConfig
from electra_tf.pretraining_networks import build_pretrainer, objective_class
from electra_tf.pretraining_networks import pretraining_flops_per_step as flops_per_step
from electra_tf.train.describe import describe

ELECTRIC = dict(electra_objective=False, electric_objective=True)  # the original's README


def _random_weights(layer, seed=0):
    rng = np.random.default_rng(seed)
    for v in layer.weights:
        v.assign(rng.normal(0, 0.3, v.shape).astype(np.float32) + ("gamma" in v.path))


def test_the_representation_at_t_does_not_see_token_t():
    cfg = ModelConfig(
        vocab_size=50, hidden_size=8, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=16, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
    )  # fmt: skip
    gen = TwoTowerClozeGenerator(cfg)
    gen.build()
    _random_weights(gen)
    length = 9
    ids = np.random.default_rng(1).integers(5, 50, (1, length)).astype(np.int32)
    mask, seg = np.ones_like(ids), np.zeros_like(ids)

    def run(x):
        return gen(tf.constant(x), mask, seg).numpy()[0]

    base = run(ids)
    assert base.shape == (length, 16)
    # the layout by a second method: each tower alone, shifted by hand (with the wrap-around)
    ltr = gen.generator_ltr(ids, mask, seg).numpy()[0]
    rtl = gen.generator_rtl(ids, mask, seg).numpy()[0]
    for t in range(length):
        np.testing.assert_array_equal(base[t, :8], ltr[(t - 1) % length])
        np.testing.assert_array_equal(base[t, 8:], rtl[(t + 1) % length])
    for t in range(1, length - 1):  # positions 0 and L-1 wrap around: [CLS] / [SEP] there
        other = ids.copy()
        other[0, t] = 5 + (ids[0, t] - 5 + 17) % 45  # another token at t
        out = run(other)
        np.testing.assert_array_equal(out[t], base[t])  # position t does not depend on token t
        assert not np.allclose(out[t - 1], base[t - 1])  # its neighbours' rtl half does
        assert not np.allclose(out[t + 1], base[t + 1])  # and their ltr half
        # ltr: position i sees tokens <= i (diagonal included); rtl: tokens >= i
        ltr2 = gen.generator_ltr(other, mask, seg).numpy()[0]
        np.testing.assert_array_equal(ltr2[:t], ltr[:t])
        assert not np.allclose(ltr2[t], ltr[t])
        rtl2 = gen.generator_rtl(other, mask, seg).numpy()[0]
        np.testing.assert_array_equal(rtl2[t + 1 :], rtl[t + 1 :])
        assert not np.allclose(rtl2[t], rtl[t])


def _electric_model(seed=0, **overrides):
    config = PretrainingConfig.from_flat("t", "/nonexistent", {**TINY, **ELECTRIC, **overrides})
    keras.utils.set_random_seed(seed)
    model = build_pretrainer(config, VOCAB, SPECIAL)
    return config, model


def _log_softmax(x):
    x = x.astype(np.float64)
    m = x.max(-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(-1, keepdims=True))


def test_logit_shift_labels_and_cloze_loss_by_hand(synthetic_batch):
    config, model = _electric_model()
    assert isinstance(model.objective, Electric) and config.generator.two_tower_generator
    batch = synthetic_batch(4)
    out = model.compute(batch, step=2, seed=7, with_eval_stats=True)
    ids, mask, seg = (batch[k] for k in ("input_ids", "input_mask", "segment_ids"))
    # the pieces by the model's parts: the cloze model on the UNMASKED input
    cloze = model.generator_predictions(model.generator(ids, mask, seg)).numpy()  # [B, L, V]
    logq = _log_softmax(cloze)
    idn, maskn = ids.numpy(), mask.numpy().astype(np.float64)
    cand = maskn * ~np.isin(idn, [101, 102, 103])
    nll = -np.take_along_axis(logq, idn[..., None], -1)[..., 0]
    cloze_loss = (cand * nll).sum() / (cand.sum() + 1e-6)  # every candidate, not the masked
    np.testing.assert_allclose(out["cloze_loss_sum"] / out["cloze_weight_sum"], cloze_loss, 1e-5)
    m = model.mask(batch, 2, 7)
    pos = m.masked_lm_positions.numpy()
    sampled = masking.categorical_sample(
        masking.gather_positions(tf.constant(cloze), m.masked_lm_positions),
        masking.random_key(7, 2, 1),
        masking.content_keys(ids, mask),
    ).numpy()
    fake, labels = idn.copy(), np.zeros_like(idn)
    for b in range(fake.shape[0]):
        for p in set(pos[b]) - {0}:  # a position drawn twice gets the floored mean (original)
            fake[b, p] = sum(sampled[b][pos[b] == p]) // sum(pos[b] == p)
            labels[b, p] = 1  # every sampled position, even an unchanged token
    raw = model.discriminator_predictions(model.discriminator(tf.constant(fake), mask, seg))
    shifted = (
        raw.numpy().astype(np.float64)
        + np.take_along_axis(logq, fake[..., None], -1)[..., 0]
        + math.log(0.15 / 0.85)
    )
    bce = np.maximum(shifted, 0) - shifted * labels + np.log1p(np.exp(-np.abs(shifted)))
    disc = (bce * maskn).sum()
    np.testing.assert_allclose(out["disc_loss_sum"], disc, rtol=1e-5)
    assert out["disc_label_pos"] == labels.sum() > 0
    assert out["disc_pred_pos"] == ((shifted > 0) * maskn).sum()
    total = cloze_loss + 50 * disc / (maskn.sum() + 1e-6)
    np.testing.assert_allclose(out["loss"], total, rtol=1e-5)


def test_a_sample_equal_to_the_original_is_still_labelled_noise(synthetic_batch):
    batch = synthetic_batch(0)
    ids, lengths = batch["input_ids"].numpy(), batch["input_mask"].numpy().sum(1)
    ids[batch["input_mask"].numpy() == 1] = 150  # one token everywhere
    ids[:, 0], ids[np.arange(4), lengths - 1] = 101, 102
    batch = {**batch, "input_ids": tf.constant(ids)}
    labelled = {}
    for name, hp in (("electric", ELECTRIC), ("electra", dict(two_tower_generator=True))):
        config = PretrainingConfig.from_flat("t", "/nonexistent", {**TINY, **hp})
        model = build_pretrainer(config, VOCAB, SPECIAL)
        model.generator_predictions.output_bias.assign(np.eye(VOCAB)[150] * 1e4)  # samples 150
        out = model.compute(batch, step=0, seed=0, with_eval_stats=True)
        assert out["sampled_correct"] == out["mlm_weight_sum"] > 0  # every sample = original
        labelled[name] = float(out["disc_label_pos"])
    assert labelled["electra"] == 0  # ELECTRA (with the two towers): an unchanged token is real
    assert labelled["electric"] > 0  # Electric: every sampled position is a noise sample


def test_small_electric_has_the_originals_parameters_and_names():
    d = describe(PretrainingConfig.from_flat("t", "/nonexistent", ELECTRIC))
    assert d["parameters"]["total"] == 14_812_475  # the original's small Electric graph
    assert d["parameters"]["discriminator_backbone"] == 13_483_008
    assert d["two_tower_generator"] is True and d["generator_config"]["hidden_size"] == 64
    config = PretrainingConfig.from_flat("t", "/nonexistent", ELECTRIC)
    model = build_pretrainer(config, 30522, SPECIAL)
    shapes = {v.path: list(v.shape) for v in model.trainable_weights}
    assert len(shapes) == 596  # the original's variable count
    assert shapes["generator_ltr/embeddings_project/kernel"] == [128, 64]
    assert shapes["generator_rtl/embeddings_project/kernel"] == [128, 64]
    assert shapes["generator_rtl/encoder/layer_11/output/LayerNorm/gamma"] == [64]
    assert shapes["cloze_predictions/dense/kernel"] == [128, 128]  # [2 h_g, E]
    assert shapes["cloze_predictions/LayerNorm/gamma"] == [128]
    assert shapes["cloze_predictions/output_bias"] == [30522]
    assert not any(p.startswith(("generator/", "generator_predictions/")) for p in shapes)
    assert not any("generator_ltr/embeddings/" in p for p in shapes)  # tied: electra's
    # FLOPs: the discriminator, both towers and the cloze head at every position, by hand
    disc = TransformerFlops(h=256, l=12, s=128, e=128, output_frac=19 / 128)
    tower = TransformerFlops(h=64, l=12, s=128, e=128, output_frac=19 / 128)
    head = TransformerFlops(h=128, l=12, s=128, e=128, i=256, heads=1, output_frac=1.0)
    fwd = disc.forward_flops(True) + 2 * (12 * tower.block_flops() + tower.input_embedding_flops())
    fwd += head.mlm_output_flops()
    assert flops_per_step(config, 30522) == pytest.approx(2 * 128 * fwd, rel=1e-12)


def test_an_original_electric_checkpoint_loads(tmp_path):
    """Names and shapes written out from the reference's list (§8: generator_ltr/...,
    generator_rtl/..., each with its embeddings_project, cloze_predictions/dense [2 h_g, E])."""
    from test_checkpoints import HG, IG, LAYERS, E, original_names
    from test_checkpoints import TINY as CK_TINY

    names = original_names(generator=False)
    for tower in ("generator_ltr", "generator_rtl"):
        for n in range(LAYERS):
            base = f"{tower}/encoder/layer_{n}"
            for sub in ("attention/self/query", "attention/self/key", "attention/self/value"):
                names[f"{base}/{sub}/kernel"], names[f"{base}/{sub}/bias"] = [HG, HG], [HG]
            names[f"{base}/attention/output/dense/kernel"] = [HG, HG]
            names[f"{base}/attention/output/dense/bias"] = [HG]
            names[f"{base}/intermediate/dense/kernel"] = [HG, IG]
            names[f"{base}/intermediate/dense/bias"] = [IG]
            names[f"{base}/output/dense/kernel"] = [IG, HG]
            names[f"{base}/output/dense/bias"] = [HG]
            for ln in ("attention/output/LayerNorm", "output/LayerNorm"):
                names[f"{base}/{ln}/beta"], names[f"{base}/{ln}/gamma"] = [HG], [HG]
        names[f"{tower}/embeddings_project/kernel"] = [E, HG]
        names[f"{tower}/embeddings_project/bias"] = [HG]
    names["cloze_predictions/dense/kernel"] = [2 * HG, E]
    names["cloze_predictions/dense/bias"] = [E]
    names["cloze_predictions/LayerNorm/beta"] = [E]
    names["cloze_predictions/LayerNorm/gamma"] = [E]
    names["cloze_predictions/output_bias"] = [V]
    prefix = str(tmp_path / "electric")
    values = write_fake_original(prefix, names)
    config = PretrainingConfig.from_flat("t", "/nonexistent", {**CK_TINY, **ELECTRIC})
    model = build_pretrainer(config, V, {"pad": 0, "cls": 2, "sep": 3, "mask": 4})
    restored, missing = restore.warm_start(model, prefix)
    assert missing == [] and restored == len(names) == len(model.trainable_weights)
    for v in model.trainable_weights:
        np.testing.assert_array_equal(v.numpy(), values[v.path])


def test_electric_hparams():
    def config(**hp):
        return PretrainingConfig.from_flat("t", "/nonexistent", {**TINY, **hp})

    for hp in (dict(electric_objective=True), dict(objective="electric"), ELECTRIC):
        c = config(**hp)
        assert objective_class(c) is Electric and c.generator.two_tower_generator
    assert objective_class(config(two_tower_generator=True)) is not Electric  # ELECTRA's + 2 towers
    errors = {
        "two_tower_generator cannot be false": dict(electric_objective=True, two_tower_generator=False),
        "objective 'mlm'": dict(electric_objective=True, objective="mlm"),
        "adversarial_generator cannot be combined with Electric": dict(
            objective="electric", adversarial_generator=True
        ),
        "generator network of its own": dict(objective="electric", uniform_generator=True),
        "untied_generator=true": dict(
            objective="electric", untied_generator=False, generator_hidden_size=1.0
        ),
    }  # fmt: skip
    for message, hp in errors.items():
        with pytest.raises(UserError, match=message):
            config(**hp)


@pytest.mark.slow
def test_run_pretraining_trains_electric_and_describes_the_original_count(tiny_dataset, tmp_path):
    p = run_script(
        "run_pretraining.py", f"--data_dir={tmp_path}", "--model_name=m", "--describe",
        "--hparams=" + json.dumps(ELECTRIC),
    )  # fmt: skip
    assert p.returncode == 0, p.stderr[-2000:]
    assert json.loads(p.stdout)["parameters"]["total"] == 14_812_475
    data = tmp_path / "data"
    shutil.copytree(tiny_dataset, data)
    hp = {**TINY_RUN, **ELECTRIC, "num_train_steps": 4, "do_eval": True, "num_eval_steps": 2}
    hp["eval_batch_size"] = 4
    p = run_script(
        "run_pretraining.py", f"--data_dir={data}", "--model_name=electric",
        "--hparams=" + json.dumps(hp),
    )  # fmt: skip
    assert p.returncode == 0, p.stderr[-3000:]
    assert "step 4/4" in p.stdout
    model_dir = data / "models" / "electric"
    ev = json.loads((model_dir / "eval_results.json").read_text())
    assert ev["global_step"] == 4
    for key in ("cloze_loss", "masked_lm_loss", "disc_loss", "disc_auc", "loss"):
        assert np.isfinite(ev[key]), key
    assert ev["cloze_loss"] < math.log(30522) + 1  # a distribution over the vocab
    keys = tf.train.load_checkpoint(str(model_dir)).get_variable_to_shape_map()
    assert any(k.startswith("model/generator/generator_rtl/") for k in keys)
    assert os.path.exists(model_dir / "config.json")


def test_an_electric_run_exports_its_discriminator_not_a_generator_head(tmp_path, monkeypatch):
    import test_checkpoints

    from electra_tf.checkpoint import load_model

    monkeypatch.setattr(test_checkpoints, "TINY", {**test_checkpoints.TINY, **ELECTRIC})
    model, prefix = test_checkpoints.write_run(str(tmp_path / "run"))
    assert model.two_tower
    with pytest.raises(UserError, match="two-tower cloze generator has no masked-LM export"):
        load_model.load_networks(prefix, None, "generator")
    loaded = load_model.load_networks(prefix, None, "discriminator")
    for v in model.discriminator.weights:  # the trained discriminator, not a fresh one
        ours = {w.path: w for w in loaded.networks.discriminator.weights}[v.path]
        np.testing.assert_array_equal(ours.numpy(), v.numpy())
