"""LAMB (`optimizer: lamb`): ELECTRA's AdamW update scaled per variable by the trust ratio
||w|| / ||u||, against a hand computation of two steps; it trains from both scripts."""

import json
import shutil

import numpy as np
import pytest
import tensorflow as tf
from harness import TINY_RUN, run_script

from electra_tf.finetune.config import FinetuningConfig
from electra_tf.optimization import ElectraAdamW, ElectraLamb, make_optimizer
from electra_tf.pretraining_config import PretrainingConfig

PATHS = [
    "electra/encoder/layer_0/attention/self/query/kernel",
    "electra/encoder/layer_0/attention/self/query/bias",
    "electra/encoder/layer_0/output/LayerNorm/gamma",
    "task_specific/sst/dense/kernel",  # starts at zero: ||w|| = 0 gives ratio 1
]


def _variables():
    values = [[[1.0, -2.0], [0.5, 3.0]], [0.1, -0.1], [1.0, 1.0], [[0.0], [0.0]]]
    variables = [tf.Variable(np.array(v, np.float32)) for v in values]
    for v, p in zip(variables, PATHS):
        v.path = p  # the optimizer reads variable paths
    return variables


def test_two_lamb_steps_by_hand():
    variables = _variables()
    multipliers = dict(zip(PATHS, [0.5, 0.5, 0.25, 1.0]))  # layer-wise decay still applies
    opt = make_optimizer(
        "lamb", 0.1, variables, weight_decay_rate=0.01, clip_norm=1.0, lr_multipliers=multipliers
    )
    assert isinstance(opt, ElectraLamb) and opt.adapt_flags == [True, False, False, True]
    grads_seq = [
        [[[3.0, 0.0], [0.0, 4.0]], [0.0, 0.0], [0.0, 0.0], [[0.0], [0.0]]],
        [[[0.1, 0.2], [0.0, 0.0]], [0.3, 0.0], [0.0, -0.2], [[0.5], [-0.5]]],
    ]
    w = [np.array(v.numpy(), np.float64) for v in variables]
    m = [np.zeros_like(x) for x in w]
    s = [np.zeros_like(x) for x in w]
    decay = [True, False, False, True]  # bias and LayerNorm: no weight decay, no trust ratio
    for step, grads in enumerate(grads_seq):
        grads = [np.array(g, np.float64) for g in grads]
        norm = np.sqrt(sum(np.sum(g**2) for g in grads))
        clipped, _ = opt.clip([tf.constant(g, tf.float32) for g in grads])
        opt.apply_gradients(clipped)
        for i, g in enumerate(grads):
            g = g / max(norm, 1.0)  # global-norm clipping to 1
            m[i] = 0.9 * m[i] + 0.1 * g
            s[i] = 0.999 * s[i] + 0.001 * g**2
            u = m[i] / (np.sqrt(s[i]) + 1e-6)  # no bias correction
            if decay[i]:
                u = u + 0.01 * w[i]
                w_norm, u_norm = np.linalg.norm(w[i]), np.linalg.norm(u)
                ratio = w_norm / u_norm if w_norm > 0 and u_norm > 0 else 1.0
                u = ratio * u
            w[i] = w[i] - 0.1 * multipliers[PATHS[i]] * u
        if step == 0:
            # the kernel by hand: g = [[0.6, 0], [0, 0.8]], u = m / (sqrt(v) + eps) + 0.01 w,
            # ||w|| = sqrt(14.25) = 3.77492, ||u|| = 4.50028: w -= 0.05 (3.77492 / 4.50028) u
            got = opt._vars[0].numpy()
            u0 = np.array([[3.162111, 0.0], [0.0, 3.162153]]) + 0.01 * np.array([[1, -2], [0.5, 3]])
            r0 = np.sqrt(14.25) / np.linalg.norm(u0)
            expected = np.array([[1, -2], [0.5, 3]]) - 0.05 * r0 * u0
            np.testing.assert_allclose(got, expected, rtol=1e-5)
            assert float(got[0, 1]) == pytest.approx(-2.0 - 0.05 * r0 * -0.02, rel=1e-6)
    for v, expected in zip(variables, w):
        np.testing.assert_allclose(v.numpy(), expected, rtol=1e-5, atol=1e-7)
    # the zero-initialised kernel moved as AdamW's would (ratio 1) in its first update
    assert np.abs(variables[3].numpy()).max() > 0


def test_lamb_without_weight_decay_still_adapts_and_adamw_is_unchanged():
    a, b = _variables(), _variables()
    lamb = ElectraLamb(0.1, a, weight_decay_rate=0.0)
    adamw = ElectraAdamW(0.1, b, weight_decay_rate=0.0)
    assert lamb.adapt_flags == [True, False, False, True]  # the names decide, not the rate
    g = [tf.ones_like(v) for v in a]
    lamb.apply_gradients(g)
    adamw.apply_gradients(g)
    u = 0.1 / (np.sqrt(0.001) + 1e-6)  # every entry of every update
    k0 = np.array([[1.0, -2.0], [0.5, 3.0]])
    np.testing.assert_allclose(b[0].numpy(), k0 - 0.1 * u, rtol=1e-6)
    r = np.linalg.norm(k0) / (2 * u)  # ||u|| over the 4 entries
    np.testing.assert_allclose(a[0].numpy(), k0 - 0.1 * r * u, rtol=1e-6)
    np.testing.assert_allclose(a[1].numpy(), b[1].numpy())  # bias: AdamW's update
    with pytest.raises(ValueError, match="adamw, lamb"):
        make_optimizer("sgd", 0.1, a)


def test_optimizer_hparam():
    assert PretrainingConfig.from_flat("t", "d").optimization.optimizer == "adamw"
    assert (
        PretrainingConfig.from_flat("t", "d", {"optimizer": "lamb"}).optimization.optimizer
        == "lamb"
    )
    assert FinetuningConfig("m", "d").optimizer == "adamw"
    assert FinetuningConfig("m", "d", optimizer="lamb").optimizer == "lamb"
    from electra_tf.errors import UserError

    with pytest.raises(UserError, match="optimizer 'adam' is not one of adamw, lamb"):
        PretrainingConfig.from_flat("t", "d", {"optimizer": "adam"})


@pytest.mark.slow
def test_run_pretraining_with_lamb(tiny_dataset, tmp_path):
    data = tmp_path / "data"
    shutil.copytree(tiny_dataset, data)
    hp = {**TINY_RUN, "optimizer": "lamb", "num_train_steps": 4}
    p = run_script(
        "run_pretraining.py", f"--data_dir={data}", "--model_name=lamb",
        "--hparams=" + json.dumps(hp),
    )  # fmt: skip
    assert p.returncode == 0, p.stderr[-3000:]
    assert "step 4/4" in p.stdout
