"""Whole-word masking: masking chooses words (a token and its ## continuations), never part of
one, within the original's token count; the expected count against an exact enumeration."""

import itertools
import json
import shutil

import numpy as np
import pytest
import tensorflow as tf
from harness import SPECIAL, TINY, TINY_RUN, VOCAB, run_script

from electra_tf import masking, vocab
from electra_tf.pretraining_config import PretrainingConfig
from electra_tf.pretraining_networks import build_pretrainer

CLS, SEP, MASK = 101, 102, 103
CONTINUATION = np.zeros(VOCAB, bool)
CONTINUATION[150:] = True  # ids 150..199 are ## pieces, 104..149 start words


def _mask(ids, mask, mask_prob, step=0, seed=0):
    ids, mask = tf.constant(ids, tf.int32), tf.constant(mask, tf.int32)
    n = int((mask_prob + 0.005) * ids.shape[1])
    return masking.mask_inputs(
        ids, mask, mask_prob=mask_prob, max_predictions=n, mask_id=MASK,
        special_ids=(CLS, SEP, MASK), key=masking.random_key(seed, step, 0),
        example_ids=masking.content_keys(ids, mask), word_continuation=tf.constant(CONTINUATION),
    )  # fmt: skip


def _words(row, mask):
    """Words by hand: a candidate that is no ## piece after a candidate starts one."""
    words, candidate = [], lambda t: mask[t] and row[t] not in (CLS, SEP, MASK)
    for t in range(len(row)):
        if not candidate(t):
            continue
        if CONTINUATION[row[t]] and t > 0 and candidate(t - 1):
            words[-1].append(t)
        else:
            words.append([t])
    return words


def _sequences(structure, n, rng, length):
    """n rows of the same layout with random ids: "w" a word start, "c" a ## piece, or a
    special id; padded to `length`."""
    ids = np.zeros((n, length), np.int32)
    for t, kind in enumerate(structure):
        if kind == "w":
            ids[:, t] = rng.integers(104, 150, n)
        elif kind == "c":
            ids[:, t] = rng.integers(150, 200, n)
        else:
            ids[:, t] = kind
    return ids, (np.arange(length)[None] < len(structure)).astype(np.int32).repeat(n, 0)


def test_continuation_table_from_the_vocab():
    table = vocab.continuation_table({"[PAD]": 0, "play": 1, "##ing": 2, "#": 3, "##": 4})
    assert table.tolist() == [False, False, True, False, True]


def test_no_word_is_partly_masked_and_special_tokens_never_chosen():
    rng = np.random.default_rng(0)
    # two segments, a [MASK] in the text, ## pieces right after [CLS] and [SEP] (words of
    # their own), long and short words
    structure = [CLS, "c", "w", "c", "c", "w", MASK, "w", "c", SEP, "c", "w", "w", "c", "c", "c"]
    structure += ["w", "w", "c", SEP]
    ids, mask = _sequences(structure, 400, rng, 24)
    for step in range(5):
        m = _mask(ids, mask, 0.3, step=step)
        pos, w = m.masked_lm_positions.numpy(), m.masked_lm_weights.numpy()
        num = masking.num_to_predict(tf.constant(mask), 0.3, pos.shape[1]).numpy()
        assert num[0] == 6  # round(20 * 0.3), [CLS] and [SEP] counted, as the original
        for b in range(len(ids)):
            chosen = pos[b][w[b] > 0].tolist()
            assert len(chosen) == len(set(chosen)) <= num[b]  # distinct, within the count
            assert not set(ids[b, chosen]) & {CLS, SEP, MASK, 0}
            assert sorted(chosen) == chosen  # slots in position order
            for word in _words(ids[b], mask[b]):
                assert set(word) <= set(chosen) or not set(word) & set(chosen), (b, word)
            assert (pos[b][w[b] == 0] == 0).all()  # unused slots point at [CLS]
            # the ids at the chosen positions, and 85% of them [MASK] overall
            assert m.masked_lm_ids.numpy()[b][w[b] > 0].tolist() == ids[b, chosen].tolist()
    # the first ## piece (after [CLS]) and the one after [SEP] are chosen: words of their own
    m = _mask(ids, mask, 0.3)
    chosen = m.masked_lm_positions.numpy() * (m.masked_lm_weights.numpy() > 0)
    assert (chosen == 1).any() and (chosen == 10).any()


def _greedy(lengths, order, budget):
    used, taken = 0, []
    for i in order:
        if used + lengths[i] <= budget:
            used += lengths[i]
            taken.append(i)
    return used, taken


def test_expected_masked_count_matches_an_exact_enumeration():
    rng = np.random.default_rng(1)
    # [CLS] + words of 1, 3, 2, 1, 2 tokens + [SEP] = 11 tokens: round(11 x 0.3) = 3
    structure = [CLS, "w", "w", "c", "c", "w", "c", "w", "w", "c", SEP]
    lengths, budget = [1, 3, 2, 1, 2], 3
    counts, inclusion = [], np.zeros(5)
    orders = list(itertools.permutations(range(5)))
    for order in orders:  # every order of the words is equally likely
        used, taken = _greedy(lengths, order, budget)
        counts.append(used)
        inclusion[taken] += 1
    expected, inclusion = np.mean(counts), inclusion / len(orders)
    assert expected == pytest.approx(3.0 - 2 / 15, abs=1e-12)  # some orders stop at 2
    draws = 4000
    ids, mask = _sequences(structure, draws, rng, 16)
    m = _mask(ids, mask, 0.3, step=3, seed=11)
    w = m.masked_lm_weights.numpy()
    assert w.sum(1).max() <= budget
    mean = w.sum(1).mean()
    sd = np.std(counts) / np.sqrt(draws)
    assert abs(mean - expected) < 4 * sd + 1e-9, (mean, expected)
    starts = [1, 2, 5, 7, 8]  # the first token of each word
    pos = m.masked_lm_positions.numpy() * (w > 0)
    for k, t in enumerate(starts):
        freq = (pos == t).any(1).mean()
        assert abs(freq - inclusion[k]) < 4 * np.sqrt(inclusion[k] * (1 - inclusion[k]) / draws)


def test_whole_word_masks_are_a_function_of_each_example():
    rng = np.random.default_rng(2)
    ids, mask = _sequences([CLS, "w", "c", "w", "w", "c", "c", "w", SEP], 6, rng, 12)
    a = _mask(ids, mask, 0.3, step=4, seed=2)
    order = rng.permutation(6)
    b = _mask(ids[order], mask[order], 0.3, step=4, seed=2)
    for field in ("masked_lm_positions", "masked_lm_weights", "input_ids"):
        np.testing.assert_array_equal(getattr(a, field).numpy()[order], getattr(b, field).numpy())
    c = _mask(ids, mask, 0.3, step=5, seed=2)
    assert not np.array_equal(a.masked_lm_positions.numpy(), c.masked_lm_positions.numpy())


def test_the_pretrainer_normalises_by_the_masked_token_count(synthetic_batch):
    config = PretrainingConfig.from_flat("t", "/nonexistent", {**TINY, "whole_word_masking": True})
    model = build_pretrainer(config, VOCAB, SPECIAL, word_continuation=CONTINUATION)
    batch = synthetic_batch(5, batch=6, length=16)
    # the last two rows: 12 tokens, round(1.8) = 2 to mask, but words of 3, 3, 3 and 1 tokens
    ids, mask = _sequences([CLS, "w", "c", "c", "w", "c", "c", "w", "c", "c", "w", SEP], 2,
                           np.random.default_rng(0), 16)  # fmt: skip
    batch = {
        "input_ids": tf.concat([batch["input_ids"][:4], ids], 0),
        "input_mask": tf.concat([batch["input_mask"][:4], mask], 0),
        "segment_ids": batch["segment_ids"],
    }
    out = model.compute(batch, step=1, seed=3)
    dens = model.denominators(batch, 1, 3)
    m = model.mask(batch, 1, 3)
    ids, w = batch["input_ids"].numpy(), m.masked_lm_weights.numpy()
    for b in range(len(ids)):
        chosen = set(m.masked_lm_positions.numpy()[b][w[b] > 0])
        for word in _words(ids[b], batch["input_mask"].numpy()[b]):
            assert set(word) <= chosen or not set(word) & chosen
    assert float(dens["mlm_weight_sum"]) == w.sum() == float(out["mlm_weight_sum"])
    num = masking.num_to_predict(batch["input_mask"], 0.15, config.max_predictions_per_seq)
    assert num.numpy()[4:].tolist() == [2, 2] and w[4:].sum(1).tolist() == [1, 1]
    assert w.sum() < float(tf.reduce_sum(num))  # words that do not fit are left out
    np.testing.assert_allclose(
        out["loss"] - 50 * out["disc_loss_sum"] / (float(tf.reduce_sum(batch["input_mask"])) + 1e-6),
        out["mlm_loss_sum"] / (w.sum() + 1e-6), rtol=1e-5,
    )  # fmt: skip


@pytest.mark.slow
def test_run_pretraining_with_whole_word_masking(tiny_dataset, tmp_path):
    data = tmp_path / "data"
    shutil.copytree(tiny_dataset, data)
    hp = {**TINY_RUN, "whole_word_masking": True, "num_train_steps": 4}
    p = run_script(
        "run_pretraining.py", f"--data_dir={data}", "--model_name=wwm",
        "--hparams=" + json.dumps(hp),
    )  # fmt: skip
    assert p.returncode == 0, p.stderr[-3000:]
    assert "step 4/4" in p.stdout
    config = json.loads((data / "models" / "wwm" / "config.json").read_text())
    assert config["whole_word_masking"] is True


def test_the_table_comes_from_the_vocab_file_sized_to_the_model(tmp_path):
    # a vocab file shorter than the model's vocab_size (an export of a run with more ids)
    (tmp_path / "vocab.txt").write_text("[PAD]\nthe\n##s\nplay\n##ing\n", encoding="utf-8")
    hp = {**TINY, "whole_word_masking": True, "vocab_file": str(tmp_path / "vocab.txt")}
    model = build_pretrainer(PretrainingConfig.from_flat("t", str(tmp_path), hp), VOCAB, SPECIAL)
    assert model.word_continuation.shape == (VOCAB,)
    assert np.flatnonzero(model.word_continuation).tolist() == [2, 4]
