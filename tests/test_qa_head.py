"""The joint start/end QA head: shapes, names, teacher forcing vs beam, masking, loss weights."""

import math

import numpy as np
import pytest
import tensorflow as tf

from electra_tf.finetune.qa.head import QAHead
from electra_tf.model_config import ModelConfig
from electra_tf.modeling.encoder import TransformerEncoder

B, L, H = 3, 12, 16


def _inputs(seed=0):
    rng = np.random.RandomState(seed)
    hidden = rng.normal(size=[B, L, H]).astype(np.float32)
    # [CLS] q q [SEP] doc... [SEP] pad: example 0 has 9 real tokens, 1 has 12, 2 has 7
    lengths, q_lens = [9, 12, 7], [2, 3, 1]
    mask = np.zeros([B, L], np.int32)
    seg = np.zeros([B, L], np.int32)
    for b, (n, q) in enumerate(zip(lengths, q_lens)):
        mask[b, :n] = 1
        seg[b, q + 2 : n] = 1
    return hidden, mask, seg


def _np_gelu(x):
    return 0.5 * x * (1.0 + np.vectorize(math.erf)(x / math.sqrt(2.0)))


def _log_softmax(x):
    x = x - x.max(-1, keepdims=True)
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


def _features(mask, seg, start=None, end=None, impossible=None):
    f = {"input_mask": tf.constant(mask), "segment_ids": tf.constant(seg)}
    if start is not None:
        f["squad_start_positions"] = tf.constant(start, tf.int32)
        f["squad_end_positions"] = tf.constant(end, tf.int32)
        f["squad_is_impossible"] = tf.constant(impossible, tf.int32)
        f["squad_eid"] = tf.constant([0, 1000, 2000], tf.int32)
    return f


def test_names_and_shapes():
    hidden, mask, seg = _inputs()
    head = QAHead("squad", beam_size=4, name="squad")
    out = head(tf.constant(hidden), _features(mask, seg))
    shapes = {v.path: tuple(v.shape) for v in head.weights}
    assert shapes == {
        "squad/dense/kernel": (H, 1),
        "squad/dense/bias": (1,),
        "squad/qa_hidden/kernel": (2 * H, 512),
        "squad/qa_hidden/bias": (512,),
        "squad/dense_1/kernel": (512, 1),
        "squad/dense_1/bias": (1,),
        "squad/dense_2/kernel": (2 * H, 512),
        "squad/dense_2/bias": (512,),
        "squad/dense_3/kernel": (512, 1),
        "squad/dense_3/bias": (1,),
    }
    assert all(not np.any(v.numpy()) for v in head.weights if "bias" in v.path)
    assert out["start_logits"].shape == (B, L)
    assert out["start_top_index"].shape == (B, 4) and out["start_top_log_probs"].shape == (B, 4)
    assert out["end_top_index"].shape == (B, 4, 4) and out["end_top_log_probs"].shape == (B, 4, 4)
    assert out["answerable_logit"].shape == (B,) and out["loss"].shape == (B,)
    assert not np.any(out["end_logits"].numpy())  # the original outputs zeros at prediction
    assert QAHead.from_config(head.get_config()).beam_size == 4


def test_teacher_forcing_matches_numpy_and_beam_matches_teacher_forcing():
    hidden, mask, seg = _inputs()
    k = 4
    head = QAHead("squad", beam_size=k, name="squad")
    start = np.array([5, 7, 3], np.int32)
    feats = _features(mask, seg, start, start + 1, [0, 0, 0])
    train = head(tf.constant(hidden), feats, training=True)
    w = {v.path.split("/", 1)[1]: v.numpy() for v in head.weights}
    answer_mask = mask * seg + np.eye(L)[0]
    bias = 1000.0 * (answer_mask - 1)
    start_logits = hidden @ w["dense/kernel"][:, 0] + w["dense/bias"][0] + bias
    np.testing.assert_allclose(train["start_logits"], start_logits, rtol=1e-5, atol=1e-4)
    # teacher forcing: end logits from [H[gold start] ; H_t] through qa_hidden -> dense_1
    start_vec = hidden[np.arange(B), start]  # [B, H]
    concat = np.concatenate([np.repeat(start_vec[:, None], L, 1), hidden], -1)
    final = _np_gelu(concat @ w["qa_hidden/kernel"] + w["qa_hidden/bias"])
    end_logits = final @ w["dense_1/kernel"][:, 0] + w["dense_1/bias"][0] + bias
    np.testing.assert_allclose(train["end_logits"], end_logits, rtol=1e-4, atol=1e-3)

    pred = head(tf.constant(hidden), _features(mask, seg), training=False)
    lp = _log_softmax(start_logits)
    np.testing.assert_array_equal(pred["start_top_index"], np.argsort(-lp, -1)[:, :k])
    np.testing.assert_allclose(
        pred["start_top_log_probs"], np.sort(lp, -1)[:, ::-1][:, :k], atol=1e-4
    )
    # each beam's ends equal the teacher-forced end distribution for that start
    for i in range(k):
        s_i = pred["start_top_index"].numpy()[:, i]
        forced = head(
            tf.constant(hidden), _features(mask, seg, s_i, s_i, [0, 0, 0]), training=True
        )["end_logits"].numpy()
        elp = _log_softmax(forced)
        np.testing.assert_array_equal(pred["end_top_index"][:, i], np.argsort(-elp, -1)[:, :k])
        np.testing.assert_allclose(
            pred["end_top_log_probs"][:, i], np.sort(elp, -1)[:, ::-1][:, :k], atol=1e-4
        )


def test_beam_stays_in_document_or_cls():
    hidden, mask, seg = _inputs(1)
    head = QAHead("squad", beam_size=5, name="squad")
    out = head(tf.constant(hidden), _features(mask, seg))
    allowed = (mask * seg + np.eye(L, dtype=np.int32)[0]).astype(bool)
    for b in range(B):
        assert allowed[b, out["start_top_index"].numpy()[b]].all()
        assert allowed[b, out["end_top_index"].numpy()[b].ravel()].all()


@pytest.mark.parametrize("weight", [0.5, 0.0, 2.0])
def test_loss_is_mean_of_span_ce_plus_weighted_answerable(weight):
    hidden, mask, seg = _inputs(2)
    head = QAHead("squad", beam_size=3, answerable_weight=weight, name="squad")
    start, end, imp = np.array([4, 0, 3]), np.array([6, 0, 5]), np.array([0, 1, 0])
    out = head(tf.constant(hidden), _features(mask, seg, start, end, imp), training=True)
    s_lp = _log_softmax(out["start_logits"].numpy())
    e_lp = _log_softmax(out["end_logits"].numpy())
    span = -(s_lp[np.arange(B), start] + e_lp[np.arange(B), end]) / 2
    z = out["answerable_logit"].numpy()
    sig_ce = np.maximum(z, 0) - z * imp + np.log1p(np.exp(-np.abs(z)))
    np.testing.assert_allclose(out["loss"], span + weight * sig_ce, rtol=1e-5)
    np.testing.assert_array_equal(out["eid"], [0, 1000, 2000])


def test_answerable_uses_softmax_start_weighted_hidden():
    hidden, mask, seg = _inputs(3)
    head = QAHead("squad", beam_size=3, name="squad")
    out = head(tf.constant(hidden), _features(mask, seg))
    w = {v.path.split("/", 1)[1]: v.numpy() for v in head.weights}
    p = np.exp(_log_softmax(out["start_logits"].numpy()))
    rep = np.concatenate([hidden[:, 0], np.einsum("bl,blh->bh", p, hidden)], -1)
    r = _np_gelu(rep @ w["dense_2/kernel"] + w["dense_2/bias"])
    want = r @ w["dense_3/kernel"][:, 0] + w["dense_3/bias"][0]
    np.testing.assert_allclose(out["answerable_logit"], want, rtol=1e-4, atol=1e-4)


def test_variants_without_classifier_and_independent_heads():
    hidden, mask, seg = _inputs(4)
    head = QAHead("squad", beam_size=3, joint_prediction=False, answerable_classifier=False)
    start, end, imp = np.array([4, 0, 3]), np.array([6, 0, 5]), np.array([0, 1, 0])
    out = head(tf.constant(hidden), _features(mask, seg, start, end, imp))
    assert sorted(v.path.split("/", 1)[1] for v in head.weights) == [
        "dense/bias",
        "dense/kernel",
        "dense_1/bias",
        "dense_1/kernel",
    ]
    assert not np.any(out["answerable_logit"].numpy())
    s_lp = _log_softmax(out["start_logits"].numpy())
    e_lp = _log_softmax(out["end_logits"].numpy())
    want = -(s_lp[np.arange(B), start] + e_lp[np.arange(B), end]) / 2
    np.testing.assert_allclose(out["loss"], want, rtol=1e-5)
    # the beam layout holds raw logits: every start paired with the same top ends
    np.testing.assert_array_equal(out["end_top_index"][:, 0], out["end_top_index"][:, 2])


def test_on_tiny_encoder_gradients_reach_encoder():
    cfg = ModelConfig(
        vocab_size=50,
        embedding_size=8,
        hidden_size=H,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=L,
    )
    enc = TransformerEncoder(cfg)
    head = QAHead("squad", beam_size=3, name="squad")
    _, mask, seg = _inputs()
    ids = tf.constant(np.random.RandomState(0).randint(1, 50, size=[B, L]) * mask)
    feats = _features(mask, seg, [4, 5, 3], [6, 5, 4], [0, 0, 1])
    with tf.GradientTape() as tape:
        seq = enc(ids, feats["input_mask"], feats["segment_ids"], training=True)
        loss = tf.reduce_sum(head(seq, feats, training=True)["loss"])
    variables = enc.trainable_variables + head.trainable_variables
    grads = tape.gradient(loss, variables)
    assert all(g is not None for g in grads)
    assert float(tf.linalg.global_norm([g for g in grads if g is not None])) > 0
    out = head(enc(ids, feats["input_mask"], feats["segment_ids"]), feats)
    assert out["end_top_index"].shape == (B, 3, 3)
