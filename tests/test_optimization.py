"""ELECTRA AdamW and the learning-rate schedule against hand computations."""

import numpy as np
import pytest
import tensorflow as tf

from electra_tf.optimization import ElectraAdamW, ElectraSchedule, layer_depth


class _Var:
    """A tf.Variable with an explicit path, as Keras variables have."""

    def __init__(self, path, value):
        self.path = path
        self.var = tf.Variable(np.array(value, np.float32))

    def __getattr__(self, name):
        return getattr(self.var, name)


def test_schedule_is_decay_times_warmup():
    s = ElectraSchedule(1e-3, num_train_steps=100, warmup_steps=10)
    # lr(t) = 1e-3 * (1 - t/100) * min(1, t/10)
    for t, expected in [(0, 0.0), (5, 1e-3 * 0.95 * 0.5), (10, 1e-3 * 0.9), (50, 5e-4), (100, 0.0)]:
        assert float(s(t)) == pytest.approx(expected, rel=1e-6, abs=1e-12)  # float32
    assert float(s(150)) == 0.0
    sq = ElectraSchedule(1.0, 100, 0, power=2.0)
    assert float(sq(50)) == pytest.approx(0.25)


def test_two_updates_by_hand_with_decay_exclusions_and_clipping():
    kernel = _Var("electra/encoder/layer_0/attention/self/query/kernel", [[1.0, -2.0], [0.5, 3.0]])
    bias = _Var("electra/encoder/layer_0/attention/self/query/bias", [0.1, -0.1])
    gamma = _Var("electra/encoder/layer_0/output/LayerNorm/gamma", [1.0, 1.0])
    variables = [kernel.var, bias.var, gamma.var]
    for v, w in zip(variables, (kernel, bias, gamma)):
        v.path = w.path  # the optimizer reads variable paths
    opt = ElectraAdamW(0.1, variables, weight_decay_rate=0.01, clip_norm=1.0)
    grads_seq = [
        [np.array([[3.0, 0.0], [0.0, 4.0]]), np.array([0.0, 0.0]), np.array([0.0, 0.0])],
        [np.array([[0.1, 0.2], [0.0, 0.0]]), np.array([0.3, 0.0]), np.array([0.0, -0.2])],
    ]
    w = [np.array(v.numpy(), np.float64) for v in variables]
    m = [np.zeros_like(x) for x in w]
    s = [np.zeros_like(x) for x in w]
    decays = [True, False, False]  # bias and LayerNorm are excluded from weight decay
    for step, grads in enumerate(grads_seq):
        # global-norm clipping to 1.0 (the first step has norm 5 -> scaled by 1/5)
        norm = np.sqrt(sum(np.sum(g**2) for g in grads))
        scale = 1.0 / max(norm, 1.0)
        clipped, _ = opt.clip([tf.constant(g, tf.float32) for g in grads])
        opt.apply_gradients(clipped)
        if step == 0:
            # kernel[0,0] by hand: g = 3/5 = 0.6, m = 0.06, v = 0.001 * 0.36 = 0.00036,
            # u = 0.06 / (sqrt(0.00036) + 1e-6) = 3.16212, w = 1 - 0.1 * (3.16212 + 0.01 * 1)
            assert float(kernel.var.numpy()[0, 0]) == pytest.approx(0.682788, abs=1e-5)
        for i, g in enumerate(grads):
            g = g * scale
            m[i] = 0.9 * m[i] + 0.1 * g
            s[i] = 0.999 * s[i] + 0.001 * g**2
            update = m[i] / (np.sqrt(s[i]) + 1e-6)  # no bias correction, eps outside the sqrt
            if decays[i]:
                update = update + 0.01 * w[i]
            w[i] = w[i] - 0.1 * update
    for v, expected in zip(variables, w):
        np.testing.assert_allclose(v.numpy(), expected, rtol=1e-5, atol=1e-7)
    assert int(opt.iterations.numpy()) == 2


def test_bias_correction_by_hand_and_against_kingma_ba():
    # a constant gradient: the corrected m and v are exactly g and g^2 at every step, so each
    # update is lr * g / (|g| + eps); the original's first update is (0.1 / sqrt(0.001)) = 3.16x it
    plain = _Var("dense/kernel", [1.0])
    corrected = _Var("dense/kernel", [1.0])
    for v in (plain, corrected):
        v.var.path = v.path
    opt_plain = ElectraAdamW(0.1, [plain.var], weight_decay_rate=0.0, clip_norm=None)
    opt_corr = ElectraAdamW(
        0.1, [corrected.var], weight_decay_rate=0.0, clip_norm=None, bias_correction=True
    )
    g = [tf.constant([2.0])]
    opt_plain.apply_gradients(g)
    opt_corr.apply_gradients(g)
    step = 0.1 * 2.0 / (2.0 + 1e-6)
    assert float(corrected.var.numpy()[0]) == pytest.approx(1.0 - step, abs=1e-6)
    first_plain = 0.1 * 0.2 / (np.sqrt(0.004) + 1e-6)
    assert float(plain.var.numpy()[0]) == pytest.approx(1.0 - first_plain, abs=1e-6)
    for _ in range(2):
        opt_corr.apply_gradients(g)
    assert float(corrected.var.numpy()[0]) == pytest.approx(1.0 - 3 * step, abs=1e-6)

    # random gradients and weight decay: Algorithm 1 of Kingma & Ba with decoupled decay
    rng = np.random.default_rng(0)
    w0 = rng.normal(size=(3, 2))
    var = _Var("encoder/layer_0/kernel", w0)
    var.var.path = var.path
    opt = ElectraAdamW(1e-2, [var.var], weight_decay_rate=0.01, clip_norm=None,
                       bias_correction=True)  # fmt: skip
    w, m, s = w0.copy(), np.zeros_like(w0), np.zeros_like(w0)
    for t in range(1, 6):
        grad = rng.normal(size=w0.shape)
        opt.apply_gradients([tf.constant(grad, tf.float32)])
        m = 0.9 * m + 0.1 * grad
        s = 0.999 * s + 0.001 * grad**2
        m_hat, s_hat = m / (1 - 0.9**t), s / (1 - 0.999**t)
        w = w - 1e-2 * (m_hat / (np.sqrt(s_hat) + 1e-6) + 0.01 * w)
    np.testing.assert_allclose(var.var.numpy(), w, rtol=1e-5, atol=1e-6)


def test_layer_depths_follow_the_original():
    assert layer_depth("electra/embeddings/word_embeddings", 12) == 0
    assert layer_depth("electra/embeddings_project/kernel", 12) == 0
    assert layer_depth("electra/encoder/layer_0/output/dense/kernel", 12) == 1
    assert layer_depth("electra/encoder/layer_11/output/dense/kernel", 12) == 12
    assert layer_depth("task_specific/sst/dense/kernel", 12) == 14


def test_pretraining_embedding_multiplier_scales_only_the_embedding_layers_first_update():
    from electra_tf.optimization import embedding_lr_multipliers

    paths = [
        "electra/embeddings/word_embeddings",
        "generator/embeddings_project/kernel",
        "electra/encoder/layer_0/output/dense/kernel",
        "generator_predictions/output_bias",
    ]
    made = [_Var(p, [[0.5, -1.0], [2.0, 0.25]]) for p in paths]
    variables = [w.var for w in made]
    for v, w in zip(variables, made):
        v.path = w.path
    assert embedding_lr_multipliers(variables, 1.0) is None  # the original's update, untouched
    mult = embedding_lr_multipliers(variables, 4.0)
    assert mult == {paths[0]: 4.0, paths[1]: 4.0, paths[2]: 1.0, paths[3]: 1.0}
    opt = ElectraAdamW(0.01, variables, weight_decay_rate=0.0, clip_norm=None, lr_multipliers=mult)
    opt.apply_gradients([tf.constant([[1.0, -1.0], [0.0, 2.0]])] * 4)
    # by hand, first step: m = 0.1 g, v = 0.001 g^2, u = 0.1 g / (sqrt(0.001) |g| + 1e-6)
    # = 3.16218 sign(g) (0 where g = 0); w -= lr * multiplier * u
    u = np.array([[3.16218, -3.16218], [0.0, 3.16218]])
    start = np.array([[0.5, -1.0], [2.0, 0.25]])
    for v, m in zip(variables, (4.0, 4.0, 1.0, 1.0)):
        np.testing.assert_allclose(v.numpy(), start - 0.01 * m * u, atol=2e-6)
