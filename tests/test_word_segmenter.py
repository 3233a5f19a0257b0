"""Whole-word masking by a word segmenter: word boundaries kept only where BERT splits, word starts
per token (the same ids as without a segmenter), carried through ExampleBuilder into the
TFRecords and dataset_info.json, whole segmented words masked (hand-derived masks), and the
one-line errors: jieba missing, and whole_word_masking on mostly-CJK data without boundaries."""

import json
import os
import random
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf
from harness import SPECIAL, TINY, VOCAB

from electra_tf import masking
from electra_tf.errors import UserError
from electra_tf.pretraining_config import PretrainingConfig
from electra_tf.pretraining_data import (
    ExampleBuilder,
    ExampleSerializer,
    build_dataset,
    check_tfrecords,
    iter_examples,
    make_tf_example,
    pretraining_dataset,
)
from electra_tf.pretraining_data.dataset_info import check_dataset_info, check_word_boundaries
from electra_tf.pretraining_data.segmentation import WordStartTokenizer, load_segmenter, pieces
from electra_tf.pretraining_networks import build_pretrainer
from electra_tf.tokenization import FullTokenizer
from electra_tf.tokenization.reference import is_chinese_char
from electra_tf.vocab import read_vocab

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LINES = os.path.join(ROOT, "tests", "data", "chinese", "lines.txt")
ZH_VOCAB = os.path.join(ROOT, "data", "vocab", "chinese_snownlp_6k.txt")
CLS, SEP, MASK = 101, 102, 103


def test_boundaries_only_where_bert_splits():
    # iPhone|6s: letters against a digit, no BasicTokenizer split: joined; the rest kept
    words = ["我", "买", "了", "iPhone", "6s", "，", "很", "好用", " ", "elec", "tra"]
    assert pieces("".join(words), words) == [
        "我", "买", "了", "iPhone6s", "，", "很", "好用", " ", "electra"
    ]  # fmt: skip
    with pytest.raises(ValueError, match="not the line"):
        pieces("我买了", ["我", "买"])


def tiny_zh_vocab(path) -> str:
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "我", "买", "了", "手", "机", "iphone",
              "##6", "##s", "，", "很", "好", "用"]  # fmt: skip
    path.write_text("".join(t + "\n" for t in tokens), encoding="utf-8")
    return str(path)


def test_word_starts_by_hand(tmp_path):
    tok = FullTokenizer(tiny_zh_vocab(tmp_path / "vocab.txt"))
    words = {
        "我买了iPhone6s手机，很好用": ["我", "买了", "iPhone", "6s", "手机", "，", "很", "好用"]
    }
    ((ids, starts),) = WordStartTokenizer(tok, words.__getitem__).tokenize(list(words))
    #          我 买 了 iphone ##6 ##s 手 机 ， 很 好 用
    assert ids == [5, 6, 7, 10, 11, 12, 8, 9, 13, 14, 15, 16]
    assert starts == [1, 1, 0, 1, 0, 0, 1, 0, 1, 1, 1, 0]
    assert ids == tok.tokenize_to_ids(list(words))[0]  # the ids of the line as a whole


def test_jieba_on_real_lines_keeps_the_ids():
    pytest.importorskip("jieba")
    lines = open(LINES, encoding="utf-8").read().splitlines()
    tok = FullTokenizer(ZH_VOCAB)
    got = WordStartTokenizer(tok, load_segmenter("jieba")).tokenize(lines)
    assert [ids for ids, _ in got] == tok.tokenize_to_ids(lines)
    tokens = [tok.convert_ids_to_tokens(ids) for ids, _ in got]
    for (ids, starts), toks in zip(got, tokens):
        assert len(starts) == len(ids) and starts[0] == 1
        assert all(s == 0 for s, t in zip(starts, toks) if t.startswith("##"))
    # jieba's words: about 1.6 characters a word on this text (single characters would be 1.0)
    n_tokens, n_words = sum(len(s) for _, s in got), sum(sum(s) for _, s in got)
    assert 1.3 < n_tokens / n_words < 2.0


def build_examples(lines, carry_overflow, seed=5, max_length=12):
    """Each line's ids are unique (a running counter from 200) and its starts given, so each
    example's expected word_starts follow from its ids alone."""
    vocab = {"[CLS]": CLS, "[SEP]": SEP}
    tok = type("T", (), {"vocab": vocab})()
    with_starts = ExampleBuilder(tok, max_length, random.Random(seed), carry_overflow)
    without = ExampleBuilder(tok, max_length, random.Random(seed), carry_overflow)
    start_of, out = {}, []
    next_id = 200
    for line in lines:
        if line is None:
            pairs = [(with_starts.end_document(), without.end_document())]
        else:
            ids = list(range(next_id, next_id + len(line)))
            next_id += len(line)
            start_of.update(zip(ids, line))
            pairs = [(with_starts.add_tokenized_line(ids, line), without.add_tokenized_line(ids))]
        pairs += list(zip(with_starts.ready_examples(), without.ready_examples()))
        out += [p for p in pairs if p[0] is not None or p[1] is not None]
    return out, start_of


def next_id_bound(pairs) -> int:
    return max(max(ex.input_ids) for ex, _ in pairs) + 1


@pytest.mark.parametrize("carry_overflow", [False, True])
def test_example_builder_carries_word_starts(carry_overflow):
    rng = np.random.default_rng(0)
    lines = []
    for _ in range(60):  # sentences of 1..9 tokens, words of 1..3; a blank line now and then
        length = int(rng.integers(1, 10))
        lines.append([1 if i == 0 or rng.random() < 0.5 else 0 for i in range(length)])
        if rng.random() < 0.1:
            lines.append(None)
    lines.append(None)
    pairs, start_of = build_examples(lines, carry_overflow)
    assert len(pairs) > 10
    for ex, plain in pairs:
        assert plain.word_starts is None and ex[:3] == plain[:3]  # the same ids and draws
        want = [start_of.get(i, 1) if m else 0 for i, m in zip(ex.input_ids, ex.input_mask)]
        assert ex.word_starts == want  # [CLS] and [SEP] 1, padding 0, each token its own
        record = make_tf_example(ex)
        assert ExampleSerializer(next_id_bound(pairs))(ex) == record.SerializeToString(
            deterministic=True
        )
        values = record.features.feature["word_starts"].int64_list.value
        assert list(values) == want


def mask(ids, input_mask, mask_prob, word_starts=None, continuation=None, step=0):
    ids, input_mask = tf.constant(ids, tf.int32), tf.constant(input_mask, tf.int32)
    n = int((mask_prob + 0.005) * ids.shape[1])
    return masking.mask_inputs(
        ids, input_mask, mask_prob=mask_prob, max_predictions=n, mask_id=MASK,
        special_ids=(CLS, SEP, MASK), key=masking.random_key(3, step, 0),
        example_ids=masking.content_keys(ids, input_mask),
        word_starts=None if word_starts is None else tf.constant(word_starts),
        word_continuation=None if continuation is None else tf.constant(continuation),
    )  # fmt: skip


def chosen(m):
    pos, w = m.masked_lm_positions.numpy(), m.masked_lm_weights.numpy()
    return [sorted(p[wt > 0].tolist()) for p, wt in zip(pos, w)]


def test_segmented_words_are_masked_whole_by_hand():
    # [CLS] a b | c d e [SEP]: words {1, 2} and {3, 4, 5}. 7 tokens x 0.3 -> round(2.1) = 2 to
    # mask: only the two-character word fits, so every draw masks exactly positions 1 and 2
    rng = np.random.default_rng(3)
    ids = rng.integers(110, 150, (48, 8)).astype(np.int32)  # 48 rows: 48 independent draws
    ids[:, 0], ids[:, 6], ids[:, 7] = CLS, SEP, 0
    input_mask = np.tile([1] * 7 + [0], (48, 1))
    starts = np.tile([1, 1, 0, 1, 0, 0, 1, 0], (48, 1))
    assert chosen(mask(ids, input_mask, 0.3, starts)) == [[1, 2]] * 48
    # 7 x 0.43 -> 3: either word first; {3, 4, 5} then leaves no room for {1, 2}, and {1, 2}
    # none for three more: [1, 2] or [3, 4, 5], never part of a word
    got = {tuple(c) for c in chosen(mask(ids, input_mask, 0.43, starts))}
    assert got == {(1, 2), (3, 4, 5)}
    # with every token a word of its own (all starts 1), parts are chosen
    got = {tuple(c) for c in chosen(mask(ids, input_mask, 0.43, np.ones_like(starts)))}
    assert len(got) > 2


def test_word_starts_and_the_wordpiece_table_agree_on_english():
    # the same words two ways: ## pieces by the vocab table, or word_starts = not a ## piece
    rng = np.random.default_rng(1)
    ids = rng.integers(104, 200, (64, 20)).astype(np.int32)
    ids[:, 0], ids[:, 10], ids[:, 19] = CLS, SEP, SEP
    input_mask = np.ones_like(ids)
    continuation = np.zeros(VOCAB, bool)
    continuation[150:] = True
    starts = (~continuation[ids]).astype(np.int32)
    a = mask(ids, input_mask, 0.15, continuation=continuation)
    b = mask(ids, input_mask, 0.15, word_starts=starts)
    for field in a._fields:
        np.testing.assert_array_equal(getattr(a, field).numpy(), getattr(b, field).numpy())


def test_the_pretrainer_masks_the_batch_word_starts():
    config = PretrainingConfig.from_flat("t", "/nonexistent", {**TINY, "whole_word_masking": True})
    model = build_pretrainer(config, VOCAB, SPECIAL, word_continuation=np.zeros(VOCAB, bool))
    rng = np.random.default_rng(2)
    ids = rng.integers(110, 150, (8, 16)).astype(np.int32)  # no ## piece: the table has no words
    ids[:, 0], ids[:, 15] = CLS, SEP
    starts = np.tile([1] + [1, 0] * 7 + [1], (8, 1)).astype(np.int32)  # two-character words
    batch = {"input_ids": tf.constant(ids), "input_mask": tf.ones_like(ids),
             "segment_ids": tf.zeros_like(ids), "word_starts": tf.constant(starts)}  # fmt: skip
    picked = chosen(model.mask(batch, 1, 3))
    assert all(len(p) == 2 for p in picked)  # round(16 x 0.15) = 2: one whole word each
    assert all(p[0] % 2 == 1 and p[1] == p[0] + 1 for p in picked)  # never half of one
    out = model.compute(batch, step=1, seed=3)
    assert float(out["mlm_weight_sum"]) == 16.0


def test_dataset_with_jieba_boundaries(tmp_path):
    pytest.importorskip("jieba")
    corpus = tmp_path / "corpus.txt"
    lines = open(LINES, encoding="utf-8").read().splitlines()[:200]
    corpus.write_text("\n".join(lines[:100] + [""] + lines[100:]) + "\n", encoding="utf-8")
    plain = build_dataset(str(corpus), ZH_VOCAB, str(tmp_path / "plain"), 64, num_out_files=2,
                          verbose=False)  # fmt: skip
    info = build_dataset(str(corpus), ZH_VOCAB, str(tmp_path / "wwm"), 64, num_out_files=2,
                         verbose=False, word_segmenter="jieba")  # fmt: skip
    assert "word_segmenter" not in plain and info["word_segmenter"] == "jieba"
    assert info["word_segmenter_version"] == "0.42.1"
    recorded = json.loads((tmp_path / "wwm" / "dataset_info.json").read_text())
    assert recorded["word_segmenter"] == "jieba"
    a, b = list(iter_examples(str(tmp_path / "plain"))), list(iter_examples(str(tmp_path / "wwm")))
    assert len(a) == len(b) == info["num_examples"] > 10
    assert [{k: e[k] for k in a[0]} for e in b] == a  # the same examples, and word starts
    assert all(set(e) == {"input_ids", "input_mask", "segment_ids"} for e in a)
    for e in b:
        n = sum(e["input_mask"])
        assert e["word_starts"][0] == 1 and not any(e["word_starts"][n:])
        assert sum(e["word_starts"][:n]) < n  # words of several characters
    check_tfrecords(str(tmp_path / "wwm"), 64)
    # the trainer's check: whole_word_masking needs the boundaries on this (all-Chinese) text
    check_dataset_info(str(tmp_path / "wwm"), ZH_VOCAB, 64, True, whole_word_masking=True)
    tokens = [t for t, i in sorted(read_vocab(ZH_VOCAB).items(), key=lambda x: x[1])]
    ids = [i for e in a for i, m in zip(e["input_ids"], e["input_mask"]) if m]
    share = sum(len(tokens[i]) == 1 and is_chinese_char(ord(tokens[i])) for i in ids) / len(ids)
    assert 0.7 < share < 0.9  # punctuation, digits, [CLS] and [SEP] are the rest
    with pytest.raises(
        UserError, match=f"no word boundaries and {share:.0%} of its tokens are CJK"
    ):
        check_dataset_info(str(tmp_path / "plain"), ZH_VOCAB, 64, True, whole_word_masking=True)
    check_dataset_info(str(tmp_path / "plain"), ZH_VOCAB, 64, True)  # character masking: fine
    batch = next(iter(pretraining_dataset(str(tmp_path / "wwm"), 64, 4, is_training=False)))
    assert sorted(batch) == ["input_ids", "input_mask", "segment_ids", "word_starts"]
    np.testing.assert_array_equal(batch["word_starts"].numpy()[0], b[0]["word_starts"])
    # a directory mixing both builds' shards is one line
    os.rename(tmp_path / "plain" / "pretrain_data.tfrecord-0-of-2",
              tmp_path / "wwm" / "pretrain_data.tfrecord-0-of-2")  # fmt: skip
    with pytest.raises(UserError, match="has word_starts .* and .* has not"):
        check_tfrecords(str(tmp_path / "wwm"), 64)


def test_whole_word_masking_on_cjk_data_without_boundaries_is_one_line(tmp_path):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n的\n是\nthe\n##s\n", encoding="utf-8")
    (tmp_path / "token_counts.txt").write_text("0\n0\n10\n10\n0\n50\n31\n0\n0\n")  # 81 / 101 CJK
    with pytest.raises(UserError, match="no word boundaries and 80% of its tokens are CJK"):
        check_word_boundaries(str(tmp_path), {}, str(vocab))
    check_word_boundaries(str(tmp_path), {"word_segmenter": "jieba"}, str(vocab))  # boundaries
    (tmp_path / "token_counts.txt").write_text("0\n0\n10\n10\n0\n5\n5\n50\n30\n")  # 10 / 110 CJK
    check_word_boundaries(str(tmp_path), {}, str(vocab))  # mostly English: the ## table's words


def test_a_missing_segmenter_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "jieba", None)  # import jieba now raises ImportError
    with pytest.raises(UserError, match=r"needs the jieba package.*pip install -e '\.\[chinese\]'"):
        load_segmenter("jieba")
    code = (
        "import runpy, sys; sys.modules['jieba'] = None; "
        f"sys.argv = ['build_pretraining_dataset.py', '--corpus_dir={LINES}', "
        f"'--vocab_file={ZH_VOCAB}', '--output_dir={tmp_path / 'out'}', '--word_segmenter=jieba']; "
        "runpy.run_path('build_pretraining_dataset.py', run_name='__main__')"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert p.returncode == 1
    assert p.stderr.strip().splitlines()[-1] == (
        "error: --word_segmenter=jieba needs the jieba package, an optional dependency: "
        "pip install -e '.[chinese]'"
    )
    assert not (tmp_path / "out").exists()


def test_english_shards_and_masks_are_bit_identical_to_before(tmp_path):
    """sha256 of the shards and of the whole-word masks as a897e3a (before segmenters) wrote and
    drew them, for the same corpus, vocab and batch."""
    import hashlib

    from harness import BERT_VOCAB, CORPUS

    lines = open(CORPUS, encoding="utf-8").readlines()[:300]
    (tmp_path / "c.txt").write_text("".join(lines), encoding="utf-8")
    build_dataset(str(tmp_path / "c.txt"), BERT_VOCAB, str(tmp_path / "out"), 32, num_out_files=2,
                  verbose=False)  # fmt: skip
    h = hashlib.sha256()
    for name in sorted(os.listdir(tmp_path / "out")):
        if name.startswith("pretrain_data"):
            h.update((tmp_path / "out" / name).read_bytes())
    assert h.hexdigest() == "80c6765c8ba2a384cf37cf4fc41d148189264241a1e62ecbbbe84b4a476e582b"
    rng = np.random.default_rng(7)
    ids = rng.integers(104, 200, (32, 24)).astype(np.int32)
    ids[:, 0], ids[:, 12], ids[:, 23] = CLS, SEP, SEP
    input_mask = np.ones_like(ids)
    input_mask[::3, 20:] = 0
    ids = ids * input_mask
    continuation = np.zeros(VOCAB, bool)
    continuation[150:] = True
    m = masking.mask_inputs(
        tf.constant(ids), tf.constant(input_mask), mask_prob=0.15, max_predictions=4,
        mask_id=MASK, special_ids=(CLS, SEP, MASK), key=masking.random_key(5, 9, 0),
        example_ids=masking.content_keys(tf.constant(ids), tf.constant(input_mask)),
        word_continuation=tf.constant(continuation),
    )  # fmt: skip
    h = hashlib.sha256()
    for t in m:
        h.update(t.numpy().tobytes())
    assert h.hexdigest() == "a9760e5bfdd1afcc096d4ef72ff1f2284dc0092446b6edd7b434aefd0f1c2e47"
