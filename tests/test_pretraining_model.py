"""The pretraining model: parameter counts, embedding tying, gradient paths, losses and labels."""

import numpy as np
import pytest
import tensorflow as tf
from harness import SPECIAL

from electra_tf.model_config import get_model_config
from electra_tf.modeling.builders import parameter_counts
from electra_tf.modeling.encoder import TransformerEncoder
from electra_tf.pretraining_config import PretrainingConfig
from electra_tf.pretraining_networks import build_pretrainer


@pytest.mark.parametrize(
    "size,expected",
    [("small", 13_483_008), ("base", 108_891_648), ("large", 334_092_288)],
)
def test_discriminator_backbone_parameter_counts_match_original(size, expected):
    config = get_model_config(size, embedding_size=128 if size == "small" else None)
    encoder = TransformerEncoder(config)
    # count from the layers' declared shapes, as the built variables would hold
    encoder.build()
    assert sum(int(np.prod(v.shape)) for v in encoder.weights) == expected


def test_small_pretraining_graph_counts_match_original():
    config = PretrainingConfig.from_flat("t", "/nonexistent")
    model = build_pretrainer(config, 30522, SPECIAL)
    counts = parameter_counts(model)
    assert counts["discriminator_backbone"] == 13_483_008
    assert counts["discriminator"] - counts["discriminator_backbone"] == 66_049  # head
    # whole pretraining graph of the original, small default (gen 0.25): 14,196,219 params
    assert counts["total"] == 14_196_219
    # generator parameters excluding the shared embeddings: 647,162
    shared = sum(int(np.prod(v.shape)) for v in model.discriminator.embeddings.weights)
    assert counts["generator"] - shared == 647_162
    names = {v.path for v in model.trainable_weights}
    assert "electra/embeddings/word_embeddings" in names
    assert "generator/embeddings_project/kernel" in names
    assert "generator_predictions/output_bias" in names
    assert "discriminator_predictions/dense_1/kernel" in names
    assert "electra/encoder/layer_11/output/LayerNorm/gamma" in names
    assert not any(n.startswith("generator/embeddings/") for n in names)


def test_tied_embeddings_are_single_variables_with_gradients_from_both_losses(
    tiny_model, synthetic_batch
):
    config, model = tiny_model()
    emb = model.discriminator.embeddings
    assert model.generator.embeddings is emb
    paths = [v.path for v in model.trainable_weights]
    assert len(paths) == len(set(paths))
    assert sum(p.startswith("electra/embeddings/") for p in paths) == 5  # 3 tables + LN beta/gamma
    batch = synthetic_batch()
    for weight_name in ("gen_weight", "disc_weight"):
        model.objective.gen_weight = 1.0 if weight_name == "gen_weight" else 0.0
        model.objective.disc_weight = 1.0 if weight_name == "disc_weight" else 0.0
        with tf.GradientTape() as tape:
            loss = model.compute(batch, step=0, seed=0)["loss"]
        grads = tape.gradient(loss, emb.trainable_weights)
        for v, g in zip(emb.trainable_weights, grads):
            assert g is not None and float(tf.norm(tf.convert_to_tensor(g))) > 0, (
                weight_name,
                v.path,
            )


def test_discriminator_loss_does_not_reach_generator_encoder(tiny_model, synthetic_batch):
    config, model = tiny_model()
    batch = synthetic_batch(1)
    gen_only = [
        v
        for v in model.generator.trainable_weights + model.generator_predictions.trainable_weights
        if not v.path.startswith("electra/embeddings/")
    ]
    with tf.GradientTape() as tape:
        out = model.compute(batch, step=0, seed=0)
    # the samples are stop-gradient: the discriminator loss has no path to the generator
    grads = tape.gradient(out["disc_loss_sum"], gen_only)
    assert all(g is None for g in grads)
    assert float(out["disc_loss_sum"]) > 0


def test_untied_generator_embeddings_have_their_own_tables(tiny_model):
    config, model = tiny_model(untied_generator_embeddings=True)
    assert model.generator.embeddings is not model.discriminator.embeddings
    assert model.generator.embeddings_project is None  # E = generator hidden size
    paths = {v.path for v in model.trainable_weights}
    assert "generator/embeddings/word_embeddings" in paths


def test_losses_and_labels_by_hand(tiny_model, synthetic_batch):
    config, model = tiny_model()
    batch = synthetic_batch(2)
    out = model.compute(batch, step=3, seed=5, with_eval_stats=True)
    # recompute the pieces with the model's own masking and sampling, then the formulas by hand
    from electra_tf import masking

    ids = batch["input_ids"]
    m = masking.mask_inputs(
        ids,
        batch["input_mask"],
        mask_prob=0.15,
        max_predictions=config.max_predictions_per_seq,
        mask_id=103,
        special_ids=(101, 102, 103),
        key=masking.random_key(5, 3, 0),
        example_ids=masking.content_keys(ids, batch["input_mask"]),
    )
    gen = model.generator(m.input_ids, batch["input_mask"], batch["segment_ids"])
    logits = model.generator_predictions(masking.gather_positions(gen, m.masked_lm_positions))
    logp = tf.nn.log_softmax(logits).numpy()
    w = m.masked_lm_weights.numpy()
    nll = -np.take_along_axis(logp, m.masked_lm_ids.numpy()[..., None], -1)[..., 0]
    np.testing.assert_allclose(out["mlm_loss_sum"], (w * nll).sum(), rtol=1e-5)
    sampled = masking.categorical_sample(
        logits, masking.random_key(5, 3, 1), masking.content_keys(ids, batch["input_mask"])
    ).numpy()
    fake = ids.numpy().copy()
    pos = m.masked_lm_positions.numpy()
    labels = np.zeros_like(fake)
    for b in range(fake.shape[0]):
        for n in range(pos.shape[1]):
            if pos[b, n] != 0:
                fake[b, pos[b, n]] = sampled[b, n]
        for n in range(pos.shape[1]):
            p = pos[b, n]
            if p != 0 and fake[b, p] != ids.numpy()[b, p]:
                labels[b, p] = 1
    disc_logits = model.discriminator_predictions(
        model.discriminator(tf.constant(fake), batch["input_mask"], batch["segment_ids"])
    ).numpy()
    mask = batch["input_mask"].numpy().astype(np.float64)
    bce = np.maximum(disc_logits, 0) - disc_logits * labels + np.log1p(np.exp(-abs(disc_logits)))
    np.testing.assert_allclose(out["disc_loss_sum"], (bce * mask).sum(), rtol=1e-4)
    expected = (w * nll).sum() / (w.sum() + 1e-6) + 50 * (bce * mask).sum() / (mask.sum() + 1e-6)
    np.testing.assert_allclose(out["loss"], expected, rtol=1e-4)
    assert out["disc_label_pos"] == labels.sum()


def test_mlm_objective_has_no_discriminator(tiny_model, synthetic_batch):
    config, model = tiny_model(electra_objective=False)
    assert model.generator is model.discriminator
    assert getattr(model, "discriminator_predictions", None) is None
    out = model.compute(synthetic_batch(), step=0, seed=0)
    assert "disc_loss_sum" not in out
    np.testing.assert_allclose(out["loss"], out["mlm_loss_sum"] / (out["mlm_weight_sum"] + 1e-6))


@pytest.mark.parametrize("precision", ["mixed_float16", "mixed_bfloat16"])
def test_mixed_precision_keeps_sampling_softmax_layernorm_and_losses_in_float32(
    precision, tiny_model, synthetic_batch
):
    config, model = tiny_model(precision=precision)
    assert model.discriminator.layer_0.query.compute_dtype == precision.split("_")[1]
    assert all(v.dtype == "float32" for v in model.trainable_weights)
    batch = synthetic_batch(3)
    fn = tf.function(lambda b: model.compute(b, step=1, seed=2, training=True, dropout_seed=[1, 2]))
    out = fn(batch)
    for key in ("loss", "mlm_loss_sum", "disc_loss_sum"):
        assert out[key].dtype == tf.float32 and np.isfinite(out[key].numpy())
    ops = fn.get_concrete_function(batch).graph.get_operations()
    half = tf.float16 if precision == "mixed_float16" else tf.bfloat16

    def dtypes(op_type):
        return {o.outputs[0].dtype for o in ops if o.type == op_type}

    # matmuls run in half precision ...
    assert half in dtypes("BatchMatMulV2") | dtypes("MatMul")
    # ... but the sampler's weights (Exp) and cumulative sums, softmaxes, LayerNorm statistics
    # (Rsqrt) and the losses' log-sum-exp and sigmoid cross-entropy are float32
    for op_type in ("Exp", "Cumsum", "Log", "Softmax", "Rsqrt", "Log1p"):
        floats = {d for d in dtypes(op_type) if d.is_floating}
        assert floats == {tf.float32}, (op_type, dtypes(op_type))


def test_sampling_logits_apply_temperature_and_disallow_correct(tiny_model):
    from electra_tf import masking

    _, model = tiny_model(temperature=0.5, disallow_correct=True)
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(2, 3, 200)).astype(np.float32)
    targets = rng.integers(110, 200, (2, 3)).astype(np.int32)
    got = model.sampling_logits(tf.constant(logits), tf.constant(targets)).numpy()
    want = logits / 0.5
    for b, n in np.ndindex(targets.shape):
        want[b, n, targets[b, n]] -= 1000.0
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-4)
    # the original token is never drawn; a cold temperature draws the argmax
    keys = tf.range(2, dtype=tf.int32)
    for step in range(20):
        draws = masking.categorical_sample(
            tf.constant(got), masking.random_key(1, step, 1), keys
        ).numpy()
        assert not (draws == targets).any()
    _, cold = tiny_model(temperature=1e-4)
    draws = masking.categorical_sample(
        cold.sampling_logits(tf.constant(logits), tf.constant(targets)),
        masking.random_key(1, 0, 1),
        keys,
    ).numpy()
    np.testing.assert_array_equal(draws, logits.argmax(-1))


@pytest.mark.parametrize("tied", [True, False])
def test_untied_output_embeddings_keep_the_softmax_off_the_input_table(
    tiny_model, synthetic_batch, tied
):
    # masked LM on one network: tied, every row of the word table gets the softmax's gradient
    # (each token is a negative); untied, only the rows of the tokens in its input do
    config, model = tiny_model(objective="mlm", tied_output_embeddings=tied)
    batch = synthetic_batch(1)
    table = model.discriminator.embeddings.word_embeddings
    with tf.GradientTape() as tape:
        loss = model.compute(batch, step=0, seed=0)["loss"]
    grad = tf.convert_to_tensor(tape.gradient(loss, table)).numpy()
    # the masked input: [MASK] and BERT's 10% random tokens besides the kept ones
    seen = set(model.mask(batch, 0, 0).input_ids.numpy().ravel())
    absent = [i for i in range(table.shape[0]) if i not in seen]
    assert len(absent) > 50
    absent_norm = np.abs(grad[absent]).sum(1)
    if tied:
        assert np.all(absent_norm > 0)
    else:
        assert np.all(absent_norm == 0)
        assert np.abs(grad[sorted(seen)]).sum() > 0
        out_table = model.generator_predictions.output_weights
        assert out_table.shape == table.shape


def test_untied_output_embeddings_untie_every_masked_lm_head(tiny_model):
    _, model = tiny_model(objective="replace_mlm", tied_output_embeddings=False)
    paths = {v.path for v in model.trainable_weights}
    assert "generator_predictions/output_weights" in paths
    assert "discriminator_mlm_predictions/output_weights" in paths
    _, tied = tiny_model(objective="replace_mlm")
    assert not any("output_weights" in v.path for v in tied.trainable_weights)
