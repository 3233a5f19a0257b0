"""ExampleBuilder (hand-derived examples with scripted random draws), TFRecords, tf.data input,
checks, CLI."""

import hashlib
import json
import os
import random

import numpy as np
import pytest
import tensorflow as tf
from harness import run_script

from electra_tf import pretraining_data as pd
from electra_tf.errors import UserError
from electra_tf.tokenization import ReferenceTokenizer

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LETTERS = "abcdefghijklmnopqrstuvwxyz"
PAD, CLS, SEP = 0, 2, 3
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + list(LETTERS)


def ids(text: str) -> list:
    """The tiny vocab's ids: letter x -> 5 + its index."""
    return [5 + LETTERS.index(c) for c in text.split()]


class ScriptedRng(random.Random):
    """random() and randint() return scripted values (then `default`), and record the calls."""

    def __init__(self, randoms=(), randints=(), default=None):
        super().__init__(0)
        self.randoms, self.randints, self.default = list(randoms), list(randints), default
        self.calls = []

    def random(self):
        self.calls.append("random")
        if self.randoms:
            return self.randoms.pop(0)
        assert self.default is not None, "unexpected random() draw"
        return self.default

    def randint(self, a, b):
        self.calls.append(("randint", a, b))
        return self.randints.pop(0)

    def exhausted(self) -> bool:
        return not self.randoms and not self.randints


@pytest.fixture
def vocab_file(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_text("".join(t + "\n" for t in VOCAB))
    return str(path)


@pytest.fixture
def tokenizer(vocab_file):
    return ReferenceTokenizer(vocab_file)


def feed(builder, lines):
    return [e for e in map(builder.add_line, lines) if e is not None]


def test_two_segments_with_the_quirk_and_trimming(tokenizer):
    # max 20 -> first target (20 - 3) // 2 = 8. Lengths 5, 4, 2, 9: the 4th line reaches 20.
    rng = ScriptedRng(
        randoms=[0.5, 0.9, 0.9]
    )  # two segments; S2 not to A (0.9 >= .5); target stays 20
    builder = pd.ExampleBuilder(tokenizer, 20, rng)
    lines = ["a b c d e", "f g h i", "j k", "l m n o p q r s t"]
    examples = feed(builder, lines)
    assert len(examples) == 1 and rng.exhausted()
    # S1 -> A; S2: 5+4 >= 8, draw 0.9 -> B; S3: 5+2 < 8 -> A (after B: the quirk); S4 -> B.
    # B = S2 + S4 = 13 tokens, trimmed to 20 - 7 - 3 = 10.
    a, b = ids("a b c d e j k"), ids("f g h i l m n o p q")
    assert examples[0].input_ids == [CLS] + a + [SEP] + b + [SEP]
    assert examples[0].segment_ids == [0] * 9 + [1] * 11
    assert examples[0].input_mask == [1] * 20
    assert builder.target_length == 20


def test_third_condition_sends_an_overflowing_sentence_to_a(tokenizer):
    rng = ScriptedRng(randoms=[0.5, 0.2, 0.9])  # S2: 0.2 < .5 -> A; S3: A already >= 8: no draw
    builder = pd.ExampleBuilder(tokenizer, 20, rng)
    examples = feed(builder, ["a b c d e", "f g h i", "j k l m n o p", "q r s t"])
    assert rng.exhausted() and rng.calls == ["random"] * 3
    first, second = ids("a b c d e f g h i"), ids("j k l m n o p q")  # B trimmed to 20 - 9 - 3
    assert examples[0].input_ids == [CLS] + first + [SEP] + second + [SEP]
    assert examples[0].segment_ids == [0] * 11 + [1] * 9


def test_single_segment_short_target_and_document_boundary(tokenizer):
    rng = ScriptedRng(
        # ex1: 0.05 < .1 single segment; 0.01 < .05 -> randint(5, 10) = 6
        # ex2: 0.3 two segments (first target (6 - 3) // 2 = 1); 0.99 -> target back to 10
        randoms=[0.05, 0.01, 0.3, 0.99],
        randints=[6],
    )
    builder = pd.ExampleBuilder(tokenizer, 10, rng)
    ex1 = feed(builder, ["a b c", "d e", ""])  # the blank line ends the document (5 < 10 tokens)
    assert len(ex1) == 1
    assert ex1[0].input_ids == [CLS] + ids("a b c d e") + [SEP, PAD, PAD, PAD]
    assert ex1[0].input_mask == [1] * 7 + [0] * 3
    assert ex1[0].segment_ids == [0] * 10
    assert ("randint", 5, 10) in rng.calls and builder.target_length == 6
    # the next example's target is 6: 4 + 3 >= 6 emits; trimming still uses max_length 10
    ex2 = feed(builder, ["f g h i", "j k l"])
    assert ex2[0].input_ids == [CLS] + ids("f g h i") + [SEP] + ids("j k l") + [SEP]
    assert ex2[0].segment_ids == [0] * 6 + [1] * 4
    assert builder.target_length == 10 and rng.exhausted()
    assert builder.add_line("") is None  # nothing pending: no example, no draw
    assert builder.add_line("   ") is None and rng.exhausted()


def test_one_long_sentence_is_trimmed_to_max_length(tokenizer):
    rng = ScriptedRng(randoms=[0.5, 0.5])
    builder = pd.ExampleBuilder(tokenizer, 10, rng)
    (example,) = feed(builder, [" ".join(LETTERS[:15])])
    assert example.input_ids == [CLS] + ids(" ".join(LETTERS[:8])) + [SEP]
    assert example.segment_ids == [0] * 10


def test_carry_overflow_starts_the_next_example_with_the_trimmed_tokens(tokenizer):
    lines = ["a b c d e f g", "h i j k", "l m n o p q", ""]
    # the original (default): S2 goes to B (A's target (10 - 3) // 2 = 3 is passed), B's room is
    # 10 - 7 - 3 = 0: "h i j k" is dropped; "l m n o p q" (6 < 10) ends with the document
    dropped = feed(pd.ExampleBuilder(tokenizer, 10, ScriptedRng(default=0.5)), lines)
    assert [e.input_ids[: sum(e.input_mask)] for e in dropped] == [
        [CLS] + ids("a b c d e f g") + [SEP],
        [CLS] + ids("l m n o p q") + [SEP],
    ]
    rng = ScriptedRng(default=0.5)  # always two segments, always target 10
    carried = feed(pd.ExampleBuilder(tokenizer, 10, rng, carry_overflow=True), lines)
    # "h i j k" (4) is pending; + "l m n o p q" = 10 emits: A = h i j k, B's room 10 - 4 - 3 = 3:
    # "l m n", and "o p q" is carried to the document's end
    assert [e.input_ids[: sum(e.input_mask)] for e in carried] == [
        [CLS] + ids("a b c d e f g") + [SEP],
        [CLS] + ids("h i j k") + [SEP] + ids("l m n") + [SEP],
        [CLS] + ids("o p q") + [SEP],
    ]
    assert carried[1].segment_ids == [0] * 6 + [1] * 4
    assert rng.calls == ["random"] * 6  # per example: the segment draw and the target draw


def test_carry_overflow_a_long_sentence_fills_several_examples(tokenizer):
    builder = pd.ExampleBuilder(tokenizer, 10, ScriptedRng(default=0.5), carry_overflow=True)
    first = builder.add_line(" ".join(LETTERS[:20]))  # 20 tokens: 8, 8, then 4 at the end
    more = list(builder.ready_examples())
    last = builder.end_document()
    assert [e.input_ids[: sum(e.input_mask)] for e in [first, *more, last]] == [
        [CLS] + ids(" ".join(LETTERS[0:8])) + [SEP],
        [CLS] + ids(" ".join(LETTERS[8:16])) + [SEP],
        [CLS] + ids(" ".join(LETTERS[16:20])) + [SEP],
    ]
    assert list(builder.ready_examples()) == [] and builder.end_document() is None


def test_carry_overflow_keeps_every_token_of_each_document(tmp_path, tokenizer):
    # random documents and draws: per document, the examples hold exactly its tokens (a multiset:
    # the original's quirk can put a later sentence in A before B), and none spans two documents
    gen = random.Random(11)
    docs = [
        [" ".join(gen.choice(LETTERS) for _ in range(gen.randint(1, 30)))
         for _ in range(gen.randint(1, 8))]
        for _ in range(40)
    ]  # fmt: skip
    path = write(tmp_path / "docs.txt", "\n\n".join("\n".join(d) for d in docs) + "\n")
    builder = pd.ExampleBuilder(tokenizer, 12, random.Random(5), carry_overflow=True)
    got = [
        [t for t in e.input_ids[: sum(e.input_mask)] if t not in (CLS, SEP)]
        for e in pd.iter_file_examples(path, builder, tokenizer, chunk_lines=3)
    ]
    for doc in docs:
        want, taken = sorted(ids(" ".join(doc))), []
        while len(taken) < len(want):
            taken += got.pop(0)
        assert sorted(taken) == want
    assert got == []
    original = pd.ExampleBuilder(tokenizer, 12, random.Random(5))
    kept = sum(
        sum(1 for t in e.input_ids if t not in (PAD, CLS, SEP))
        for e in pd.iter_file_examples(path, original, tokenizer)
    )
    assert kept < sum(len(ids(" ".join(d))) for d in docs)  # the original drops some


def write(path, text):
    path.write_text(text)
    return str(path)


def test_file_feeding_blanks_and_end_of_file_flush(tmp_path, tokenizer):
    f1 = write(tmp_path / "f1.txt", "a b\n\n  \nc d e\n")
    f2 = write(tmp_path / "f2.txt", "f\ng h\n")
    rng = ScriptedRng(default=0.5)  # two segments, S->B, no short target
    builder = pd.ExampleBuilder(tokenizer, 16, rng)
    got = list(pd.iter_file_examples(f1, builder, tokenizer, blanks_separate_docs=True))
    got += list(pd.iter_file_examples(f2, builder, tokenizer, blanks_separate_docs=True))
    # documents: [a b], [c d e] (flushed at the end of f1: examples never span files), [f, g h]
    # first target (16 - 3) // 2 = 6: f (1) then g h (1 + 2 < 6) -> both in A
    assert [e.input_ids[: sum(e.input_mask)] for e in got] == [
        [CLS] + ids("a b") + [SEP],
        [CLS] + ids("c d e") + [SEP],
        [CLS] + ids("f g h") + [SEP],
    ]
    builder = pd.ExampleBuilder(tokenizer, 16, ScriptedRng(default=0.5))
    got = list(pd.iter_file_examples(f1, builder, tokenizer, blanks_separate_docs=False))
    assert [e.input_ids[: sum(e.input_mask)] for e in got] == [[CLS] + ids("a b c d e") + [SEP]]


def test_batched_tokenization_equals_line_by_line(tmp_path):
    tokenizer = ReferenceTokenizer(os.path.join(REPO, "data/vocab/vocab.txt"))
    with open(os.path.join(REPO, "data/corpus/enwiki_sample.txt"), encoding="utf-8") as f:
        lines = [next(f) for _ in range(500)]
    path = write(tmp_path / "c.txt", "".join(lines))
    expected = feed(pd.ExampleBuilder(tokenizer, 32, random.Random(7)), lines + [""])
    got = list(
        pd.iter_file_examples(
            path, pd.ExampleBuilder(tokenizer, 32, random.Random(7)), tokenizer, chunk_lines=7
        )
    )
    assert len(expected) > 100 and got == expected
    # the 5% short targets and 10% single segments did happen in that many examples
    assert any(sum(e.input_mask) < 20 for e in got) and any(max(e.segment_ids) == 0 for e in got)


def test_fast_serializer_matches_protobuf(tokenizer):
    example = pd.PretrainingExample([CLS, 5, 300, 20000, SEP, 0], [1] * 5 + [0], [0, 0, 0, 1, 1, 0])
    fast = pd.ExampleSerializer(30522)(example)
    assert fast == pd.make_tf_example(example).SerializeToString(deterministic=True)  # keys sorted
    assert tf.train.Example.FromString(fast) == pd.make_tf_example(example)


# --------------------------------------------------------------------------------------------------
# Building, reading and checking TFRecords


def build(*args, **kwargs) -> dict:
    """build_dataset with the pure-Python tokenizer (same ids as the default, no set-up cost)."""
    return pd.build_dataset(*args, verbose=False, tokenizer_class=ReferenceTokenizer, **kwargs)


DOCS = [
    "a",
    "b c",
    "d e f",
    "g h i j",
    "k",
    "l m",
    "n o p",
]  # one line each: shorter than any target


@pytest.fixture
def built(tmp_path, vocab_file):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    write(corpus / "docs.txt", "\n\n".join(DOCS) + "\n")
    out = str(tmp_path / "out")
    info = build(str(corpus), vocab_file, out, max_seq_length=8, num_out_files=2, seed=3)
    return out, info


def expected_example(doc: str, length: int = 8) -> dict:
    n = len(doc.split()) + 2
    return {
        "input_ids": [CLS] + ids(doc) + [SEP] + [0] * (length - n),
        "input_mask": [1] * n + [0] * (length - n),
        "segment_ids": [0] * length,
    }


def test_build_writes_round_robin_shards_info_and_counts(built, vocab_file):
    out, info = built
    # one sentence per document, shorter than any target: one example per document, in order,
    # example k in file k % 2, whatever the random draws
    assert list(pd.iter_examples(os.path.join(out, "pretrain_data.tfrecord-0-of-2"))) == [
        expected_example(d) for d in DOCS[0::2]
    ]
    assert list(pd.iter_examples(os.path.join(out, "pretrain_data.tfrecord-1-of-2"))) == [
        expected_example(d) for d in DOCS[1::2]
    ]
    num_tokens = sum(len(d.split()) + 2 for d in DOCS)
    with open(vocab_file, "rb") as f:
        sha = hashlib.sha256(f.read()).hexdigest()
    with open(os.path.join(out, "dataset_info.json")) as f:
        assert json.load(f) == info
    assert {k: info[k] for k in list(info)[:9] + ["num_out_files"]} == {
        "num_examples": 7,
        "num_tokens": num_tokens,
        "max_seq_length": 8,
        "vocab_size": len(VOCAB),
        "vocab_sha256": sha,
        "do_lower_case": True,
        "strip_accents": True,
        "seed": 3,
        "num_out_files": 2,
    }
    counts = pd.read_token_counts(out)
    expected = np.zeros(len(VOCAB), np.int64)
    expected[CLS] = expected[SEP] = 7
    expected[5:21] = 1  # a..p once each
    np.testing.assert_array_equal(counts, expected)
    assert counts.sum() == num_tokens


def test_build_records_carry_overflow(built, tmp_path, vocab_file):
    assert built[1]["carry_overflow"] is False
    path = write(tmp_path / "long.txt", " ".join(LETTERS[:20]) + "\n")
    sizes = {}
    for carry in (False, True):
        out = str(tmp_path / f"carry_{carry}")
        info = build(path, vocab_file, out, max_seq_length=8, num_out_files=1, carry_overflow=carry)
        assert info["carry_overflow"] is carry
        sizes[carry] = (info["num_examples"], info["num_tokens"])
    # one 20-token sentence at length 8: the original keeps 6 tokens; carried, 6 + 6 + 6 + 2
    assert sizes == {False: (1, 8), True: (4, 20 + 4 * 2)}


def test_pretraining_dataset_round_trip(built):
    out, _ = built
    batches = list(
        pd.pretraining_dataset(out, 8, batch_size=2, is_training=False).as_numpy_iterator()
    )
    assert len(batches) == 3  # 7 examples, drop_remainder
    # deterministic interleave of the 2 files, one record each in turn = the corpus order
    for name in pd.FEATURE_NAMES:
        got = np.concatenate([b[name] for b in batches])
        assert got.dtype == np.int32 and got.shape == (6, 8)
        np.testing.assert_array_equal(got, [expected_example(d)[name] for d in DOCS[:6]])

    def train_batches():
        ds = pd.pretraining_dataset(
            out + "/pretrain_data.tfrecord*", 8, 3, is_training=True, seed=5
        )
        assert ds.element_spec["input_ids"].shape.as_list() == [3, 8]
        return [b["input_ids"] for b in ds.take(6).as_numpy_iterator()]

    first, again = train_batches(), train_batches()
    np.testing.assert_array_equal(first, again)  # seeded: reproducible
    rows = {tuple(r) for b in first for r in b}  # repeated: 18 rows from the 7 examples
    assert rows <= {tuple(expected_example(d)["input_ids"]) for d in DOCS} and len(rows) > 1


def test_pretraining_dataset_shards_by_input_context(built, tmp_path, vocab_file):
    out, _ = built
    context = tf.distribute.InputContext(num_input_pipelines=2, input_pipeline_id=1)
    ds = pd.pretraining_dataset(out, 8, 1, is_training=False, input_context=context)
    got = [b["input_ids"][0].tolist() for b in ds.as_numpy_iterator()]
    assert got == [expected_example(d)["input_ids"] for d in DOCS[1::2]]  # file 1 only
    # one file, two pipelines: shard by record
    one = str(tmp_path / "one")
    corpus = os.path.join(os.path.dirname(out), "corpus")
    build(corpus, vocab_file, one, max_seq_length=8, num_out_files=1)
    ds = pd.pretraining_dataset(one, 8, 1, is_training=False, input_context=context)
    got = [b["input_ids"][0].tolist() for b in ds.as_numpy_iterator()]
    assert got == [expected_example(d)["input_ids"] for d in DOCS[1::2]]


def test_build_is_reproducible_and_refuses_to_overwrite(built, vocab_file, tmp_path):
    out, _ = built
    corpus = os.path.join(os.path.dirname(out), "corpus")
    write(tmp_path / "corpus" / "more.txt", "q r s t u v\nw x y z\na b c d e f g h i\n")
    with pytest.raises(UserError, match="already holds 2 pretrain_data.tfrecord"):
        build(corpus, vocab_file, out, max_seq_length=8, num_out_files=2)

    def rebuild(seed):
        build(corpus, vocab_file, out, 8, num_out_files=3, overwrite=True, seed=seed)
        return [(tmp_path / "out" / n).read_bytes() for n in sorted(os.listdir(out))]

    first = rebuild(11)
    assert sorted(os.listdir(out)) == ["dataset_info.json"] + [
        f"pretrain_data.tfrecord-{i}-of-3" for i in range(3)
    ] + ["token_counts.txt"]  # the 2 old shards were deleted
    assert rebuild(11) == first
    assert rebuild(12) != first


def test_build_errors(tmp_path, vocab_file):
    out = str(tmp_path / "out")
    with pytest.raises(UserError, match="corpus not found"):
        pd.build_dataset(str(tmp_path / "nope"), vocab_file, out, verbose=False)
    (tmp_path / "blank").mkdir()
    write(tmp_path / "blank" / "a.txt", "\n  \n\n")
    with pytest.raises(UserError, match="corpus is empty"):
        pd.build_dataset(str(tmp_path / "blank"), vocab_file, out, verbose=False)
    with pytest.raises(UserError, match="vocab file not found"):
        pd.build_dataset(str(tmp_path / "blank"), str(tmp_path / "v.txt"), out, verbose=False)
    assert not os.path.exists(out)


def write_records(path, features: dict):
    with tf.io.TFRecordWriter(str(path)) as writer:
        feature = {}
        for name, value in features.items():
            if isinstance(value[0], float):
                feature[name] = tf.train.Feature(float_list=tf.train.FloatList(value=value))
            else:
                feature[name] = tf.train.Feature(int64_list=tf.train.Int64List(value=value))
        example = tf.train.Example(features=tf.train.Features(feature=feature))
        writer.write(example.SerializeToString())
    return str(path)


def test_check_tfrecords(built, tmp_path):
    out, _ = built
    assert len(pd.check_tfrecords(out, 8)) == 2
    assert pd.check_tfrecords(out + "/pretrain_data.tfrecord-1*", 8)[0].endswith("-1-of-2")
    with pytest.raises(
        UserError, match="feature input_ids has length 8, expected max_seq_length 16"
    ):
        pd.check_tfrecords(out, 16)
    with pytest.raises(UserError, match="no pretraining TFRecords match"):
        pd.check_tfrecords(str(tmp_path / "missing*"), 8)
    good = {"input_ids": [1] * 8, "input_mask": [1] * 8, "segment_ids": [0] * 8}
    bad = write_records(tmp_path / "bad1", {**good, "masked_lm_ids": [0] * 8})
    with pytest.raises(UserError, match=r"bad1: .*missing \[\], unexpected \['masked_lm_ids'\]"):
        pd.check_tfrecords(bad, 8)
    bad = write_records(
        tmp_path / "bad2", {"input_id": [1] * 8, "input_mask": [1] * 8, "segment_ids": [0] * 8}
    )
    with pytest.raises(
        UserError, match=r"bad2: .*missing \['input_ids'\], unexpected \['input_id'\]"
    ):
        pd.check_tfrecords(bad, 8)
    bad = write_records(tmp_path / "bad3", {**good, "segment_ids": [0.0] * 8})
    with pytest.raises(UserError, match="bad3: feature segment_ids is float_list"):
        pd.check_tfrecords(bad, 8)
    (tmp_path / "empty").write_bytes(b"")
    with pytest.raises(UserError, match="are empty"):
        pd.check_tfrecords(str(tmp_path / "empty"), 8)
    # a JSON file matched by a too-wide glob: its first 8 bytes read as a length of ~3e18 are
    # refused before any read (the read crashed the process)
    (tmp_path / "dataset_info.json").write_text('{\n  "num_examples": 22956\n}\n')
    with pytest.raises(UserError, match="dataset_info.json is not an uncompressed TFRecord file"):
        pd.check_tfrecords(str(tmp_path / "dataset_info.json"), 8)


def test_check_dataset_info(built, tmp_path, vocab_file):
    out, info = built
    assert pd.check_dataset_info(out, vocab_file, 8, True) == info
    other = write(tmp_path / "other_vocab.txt", "".join(t + "\n" for t in VOCAB[:-1]))
    with pytest.raises(
        UserError, match="was built with another vocab .* than vocab_file .*other_vocab"
    ):
        pd.check_dataset_info(out, other, 8, True)
    with pytest.raises(UserError, match="max_seq_length 8, but max_seq_length is 128"):
        pd.check_dataset_info(out, vocab_file, 128, True)
    with pytest.raises(UserError, match="do_lower_case=True"):
        pd.check_dataset_info(out, vocab_file, 8, False)
    assert (
        pd.check_dataset_info(str(tmp_path), vocab_file, 8, True) is None
    )  # no info: nothing to check


# --------------------------------------------------------------------------------------------------
# Command line


def run_cli(*args):
    return run_script("build_pretraining_dataset.py", *args, timeout=300)


@pytest.mark.slow
def test_cli_builds_with_two_processes_then_refuses_to_overwrite(tmp_path, vocab_file):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    write(corpus / "1.txt", "\n\n".join(DOCS[:4]) + "\n")
    write(corpus / "2.txt", "\n\n".join(DOCS[4:]) + "\n")
    out = str(tmp_path / "out")
    args = [f"--corpus_dir={corpus}", f"--vocab_file={vocab_file}", f"--output_dir={out}"]
    args += ["--max_seq_length=8", "--num_out_files=2", "--num_processes=2", "--carry_overflow"]
    result = run_cli(*args)
    assert result.returncode == 0, result.stderr
    assert "wrote 7 examples" in result.stdout  # nothing overflows: the same examples either way
    with open(os.path.join(out, "dataset_info.json")) as f:
        assert json.load(f)["carry_overflow"] is True
    # corpus file k -> job k % 2 -> output files i % 2 == k
    for k, docs in enumerate((DOCS[:4], DOCS[4:])):
        path = os.path.join(out, f"pretrain_data.tfrecord-{k}-of-2")
        assert list(pd.iter_examples(path)) == [expected_example(d) for d in docs]
    shard = tmp_path / "out" / "pretrain_data.tfrecord-0-of-2"
    before = shard.read_bytes()
    result = run_cli(*args[:3], "--num_out_files=1")
    assert result.returncode == 1
    assert (
        result.stderr.strip().splitlines()[-1].startswith(f"error: output_dir {out} already holds")
    )
    assert shard.read_bytes() == before


@pytest.mark.slow
def test_cli_missing_corpus(tmp_path, vocab_file):
    result = run_cli(
        f"--corpus_dir={tmp_path}/nope", f"--vocab_file={vocab_file}", "--output_dir=x"
    )
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1] == (
        f"error: corpus not found: {tmp_path}/nope (no file, directory or glob match)"
    )
