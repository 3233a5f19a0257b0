"""Dynamic masking, sampling and scatter/gather against the original's rules."""

import numpy as np
import tensorflow as tf

from electra_tf import masking

CLS, SEP, MASK = 101, 102, 103


def _batch(lengths, max_len, rng):
    ids = np.zeros([len(lengths), max_len], np.int32)
    for b, n in enumerate(lengths):
        ids[b, 0] = CLS
        ids[b, 1 : n - 1] = rng.integers(1000, 2000, n - 2)
        ids[b, n - 1] = SEP
    return tf.constant(ids), tf.constant((ids != 0).astype(np.int32))


def test_num_to_predict_rounds_half_to_even_in_float32():
    # values from the reference: len 10 -> 2 (1.5 -> 2), 30 -> 4 (4.5 -> 4), 50 -> 8, 70 -> 10,
    # 90 -> 14, 110 -> 16; len 190 -> 29 (float32 28.499999 or 28.5000001 -> 29 in TF)
    lengths = [10, 30, 50, 70, 90, 110, 1, 2]
    mask = tf.sequence_mask(lengths, 200, dtype=tf.int32)
    got = masking.num_to_predict(mask, 0.15, 19).numpy().tolist()
    assert got == [2, 4, 8, 10, 14, 16, 1, 1]
    # capped by N = int((0.15 + 0.005) * 128) = 19
    assert masking.num_to_predict(tf.ones([1, 128], tf.int32), 0.15, 19).numpy()[0] == 19
    long = tf.sequence_mask([190, 350, 390], 512, dtype=tf.int32)
    assert masking.num_to_predict(long, 0.15, 79).numpy().tolist() == [29, 53, 59]


def test_masking_statistics_over_many_draws():
    rng = np.random.default_rng(0)
    lengths = rng.integers(5, 129, 512).tolist()
    ids, mask = _batch(lengths, 128, rng)
    n_slots = 19
    chosen_mask = kept = 0
    per_position = np.zeros(128)
    for step in range(8):
        key = masking.random_key(7, step, 0)
        out = masking.mask_inputs(
            ids,
            mask,
            mask_prob=0.15,
            max_predictions=n_slots,
            mask_id=MASK,
            special_ids=(CLS, SEP, MASK),
            key=key,
            example_ids=masking.content_keys(ids, mask),
        )
        pos = out.masked_lm_positions.numpy()
        w = out.masked_lm_weights.numpy()
        # the number of used slots follows the count formula exactly
        expected = np.maximum(1, np.minimum(n_slots, np.round(np.float32(lengths) * 0.15)))
        np.testing.assert_array_equal(w.sum(1), expected)
        assert np.all(w[:, :-1] >= w[:, 1:])  # used slots come first
        # unused slots point at 0 with id 0; used slots never hit specials or padding
        assert np.all(pos[w == 0] == 0)
        assert np.all(out.masked_lm_ids.numpy()[w == 0] == 0)
        used_ids = np.take_along_axis(ids.numpy(), pos, 1)[w == 1]
        assert not np.isin(used_ids, [CLS, SEP, MASK, 0]).any()
        np.testing.assert_array_equal(out.masked_lm_ids.numpy()[w == 1], used_ids)
        new = out.input_ids.numpy()
        for b in range(len(lengths)):
            for p in set(pos[b][w[b] == 1].tolist()):
                per_position[p] += 1
                if new[b, p] == MASK:
                    chosen_mask += 1
                else:
                    assert new[b, p] == ids.numpy()[b, p]  # kept, never a random token
                    kept += 1
            untouched = np.ones(128, bool)
            untouched[pos[b][w[b] == 1]] = False
            np.testing.assert_array_equal(new[b][untouched], ids.numpy()[b][untouched])
    frac = chosen_mask / (chosen_mask + kept)
    # ~0.85 of distinct chosen positions become [MASK] (duplicates make it slightly higher)
    assert 0.84 < frac < 0.88, frac
    # positions are uniform over candidates: early positions (always candidates) equally often
    early = per_position[1:4]
    assert early.max() / early.min() < 1.15


def test_scatter_update_ignores_position_zero_and_averages_duplicates():
    seq = tf.constant([[5, 6, 7, 8]])
    updates = tf.constant([[50, 70, 99, 10, 20]])
    positions = tf.constant([[0, 2, 0, 3, 3]])
    out, mask = masking.scatter_update(seq, updates, positions)
    # position 0 ignored; position 3 gets floor((10 + 20) / 2) = 15
    assert out.numpy().tolist() == [[5, 6, 70, 15]]
    assert mask.numpy().tolist() == [[0, 0, 1, 1]]


def test_categorical_sampling_matches_softmax_across_blocks():
    # 300 ids: three blocks of 128 (the last one partial); mass in each block, ids of
    # probability 0 (logit -1000, as disallowed tokens get) in between
    vocab = 300
    p = np.zeros(vocab)
    p[[3, 100, 127, 128, 200, 299]] = [0.05, 0.1, 0.15, 0.2, 0.3, 0.2]
    logits = np.where(p > 0, np.log(np.maximum(p, 1e-30)), -1000.0).astype(np.float32)
    n = 20000
    batch = tf.constant(np.broadcast_to(logits, (n // 4, 4, vocab)))  # [B, N, V]
    keys = tf.range(n // 4, dtype=tf.int32)
    draws = masking.categorical_sample(batch, masking.random_key(1, 0, 1), keys).numpy().ravel()
    freq = np.bincount(draws, minlength=vocab) / draws.size
    assert set(np.nonzero(freq)[0]) <= set(np.nonzero(p)[0])  # probability 0: never drawn
    # chi-square over the six ids with mass (5 degrees of freedom: 20.5 is p = 0.001)
    support = np.nonzero(p)[0]
    expected = p[support] * draws.size
    chi2 = float((((freq[support] * draws.size) - expected) ** 2 / expected).sum())
    assert chi2 < 20.5, (chi2, freq[support])
    # a pure function of (key, example content, slot): the same again, and in another order
    again = masking.categorical_sample(batch, masking.random_key(1, 0, 1), keys).numpy()
    np.testing.assert_array_equal(again.ravel(), draws)
    perm = np.random.default_rng(0).permutation(n // 4)
    shuffled = masking.categorical_sample(
        tf.gather(batch, perm), masking.random_key(1, 0, 1), tf.gather(keys, perm)
    ).numpy()
    np.testing.assert_array_equal(shuffled, draws.reshape(n // 4, 4)[perm])


def test_randomness_is_independent_of_batch_split_and_order():
    rng = np.random.default_rng(1)
    ids, mask = _batch([20, 30, 40, 50], 64, rng)
    key = masking.random_key(3, 11, 0)

    def run(i, m):
        return masking.mask_inputs(
            i,
            m,
            mask_prob=0.15,
            max_predictions=9,
            mask_id=MASK,
            special_ids=(CLS, SEP, MASK),
            key=key,
            example_ids=masking.content_keys(i, m),
        ).input_ids.numpy()

    whole = run(ids, mask)
    halves = np.concatenate([run(ids[:2], mask[:2]), run(ids[2:], mask[2:])])
    np.testing.assert_array_equal(whole, halves)
    reversed_ = run(ids[::-1], mask[::-1])[::-1]
    np.testing.assert_array_equal(whole, reversed_)
    other_step = masking.mask_inputs(
        ids,
        mask,
        mask_prob=0.15,
        max_predictions=9,
        mask_id=MASK,
        special_ids=(CLS, SEP, MASK),
        key=masking.random_key(3, 12, 0),
        example_ids=masking.content_keys(ids, mask),
    ).input_ids.numpy()
    assert not np.array_equal(whole, other_step)


def test_pick_logits_equals_the_gather_and_its_gradient_bit_for_bit():
    rng = np.random.default_rng(3)
    logits = tf.constant(rng.standard_normal((3, 4, 50)), tf.float32)
    ids = tf.constant(rng.integers(0, 50, (3, 4)), tf.int32)
    upstream = tf.constant(rng.standard_normal((3, 4)), tf.float32)

    def value_and_grad(pick):
        with tf.GradientTape() as tape:
            tape.watch(logits)
            picked = pick(logits, ids)
            loss = tf.reduce_sum((tf.reduce_logsumexp(logits, -1) - picked) * upstream)
        return picked.numpy(), tape.gradient(loss, logits).numpy()

    got, got_grad = value_and_grad(masking.pick_logits)
    want, want_grad = value_and_grad(lambda x, i: tf.gather(x, i, batch_dims=2))
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got_grad, want_grad)
    # by hand: the value is the logit at the id; the gradient is upstream * (softmax - one-hot)
    b, n = 1, 2
    row, i = logits.numpy()[b, n].astype(np.float64), ids.numpy()[b, n]
    assert got[b, n] == row[i]
    softmax = np.exp(row - row.max()) / np.exp(row - row.max()).sum()
    want_row = upstream.numpy()[b, n] * (softmax - np.eye(50)[i])
    np.testing.assert_allclose(got_grad[b, n], want_row, rtol=1e-5, atol=1e-7)
