"""FullTokenizer (tensorflow-text) against ids read off data/vocab/vocab.txt and the reference."""

import os
import random
import subprocess
import sys

import pytest
import tensorflow as tf

from electra_tf import tokenization
from electra_tf.errors import UserError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VOCAB = os.path.join(ROOT, "data", "vocab", "vocab.txt")
CORPUS = os.path.join(ROOT, "data", "corpus", "enwiki_sample.txt")

# Ids are line indices (0-based) in data/vocab/vocab.txt, found with `grep -Fxn`:
# [UNK] 100, ! 999, ( 1006, , 1010, . 1012, [ 1031, a 1037, b 1038, ο 1169, ς 1172, σ 1173,
# ™ 1580, 一 1740, 二 1752, … 1529, ！ 1986, ， 1989, new 2047, world 2088, line 2240,
# hello 7592, cafe 7668, naive 15743, ##ς 19579, δ 1158, ##σ 29733, ##δ 29722.
UNCASED_CASES = [
    ("Hello, World!", [7592, 1010, 2088, 999]),
    ("Café CAFÉ café", [7668, 7668, 7668]),  # lower-cased, then accents stripped
    ("NAÏVE", [15743]),
    ("hello… ™", [7592, 1529, 1580]),  # … is punctuation (split), ™ is a symbol
    ("hello，world！", [7592, 1989, 2088, 1986]),  # fullwidth punctuation splits too
    ("a一二b", [1037, 1740, 1752, 1038]),  # spaces around CJK ideographs
    ("hel\x01lo hel\u200blo hel\x00lo hel\ufffdlo", [7592] * 4),  # dropped characters
    ("hello\tworld\nnew\r\nline", [7592, 2088, 2047, 2240]),
    ("hello " + "x" * 201 + " world", [7592, 100, 2088]),  # over 200 characters -> [UNK]
    ("(a)[b].", [1006, 1037, 1007, 1031, 1038, 1033, 1012]),
    ("ΟΣ", [1169, 19579]),  # final sigma: ος
    ("Σ", [1173]),  # no preceding letter: σ
    ("ΔΣΔ", [1158, 29733, 29722]),  # medial sigma: δσδ
    ("", []),
    ("  \t ", []),
]


@pytest.fixture(scope="module")
def uncased():
    return tokenization.FullTokenizer(VOCAB)


@pytest.fixture(scope="module")
def reference():
    return tokenization.ReferenceTokenizer(VOCAB)


SETTINGS = [(True, True), (True, False), (False, True)]


@pytest.fixture(scope="module")
def tokenizers():
    """(lower, strip) -> (FullTokenizer, ReferenceTokenizer), built once for the module."""
    return {
        key: (tokenization.FullTokenizer(VOCAB, *key), tokenization.ReferenceTokenizer(VOCAB, *key))
        for key in SETTINGS
    }


@pytest.mark.parametrize("text,ids", UNCASED_CASES)
def test_hand_derived_ids(uncased, reference, text, ids):
    assert uncased.tokenize_to_ids([text]) == [ids]
    assert reference.tokenize_to_ids([text]) == [ids]


def test_accents_without_lower_casing(tokenizers):
    # Without lower-casing accents are never stripped: "café" has no wordpiece split ("##é" is not
    # in the uncased vocab) -> [UNK]; "Hello" keeps its capital -> [UNK]; "hello" -> 7592.
    cased = tokenizers[False, True][0]
    assert cased.tokenize_to_ids(["café Hello hello"]) == [[100, 100, 7592]]
    lower_only = tokenizers[True, False][0]
    assert lower_only.tokenize_to_ids(["café Hello"]) == [[100, 7592]]


def test_methods(uncased):
    assert uncased.tokenize("Héllo, World!") == ["hello", ",", "world", "!"]
    assert uncased.convert_tokens_to_ids(["hello", "[UNK]"]) == [7592, 100]
    assert uncased.convert_ids_to_tokens([7592, 999]) == ["hello", "!"]
    assert uncased.vocab["[MASK]"] == 103 and uncased.inv_vocab[101] == "[CLS]"
    assert uncased.basic_tokenizer.tokenize("Héllo, World!") == ["hello", ",", "world", "!"]


def test_graph_tokenizer_in_tf_function(uncased, reference):
    # FullTokenizer runs the same computation eagerly; the traced graph must agree too.
    graph = uncased.graph_tokenizer
    texts = [t for t in NASTY if t.isascii() or "\ud800" not in t] + [c[0] for c in UNCASED_CASES]
    assert graph.tokenize(tf.constant(texts)).to_list() == reference.tokenize_to_ids(texts)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def serve(texts):
        return graph.tokenize(texts).to_tensor()

    out = serve(tf.constant(["Hello, World!", "ΟΣ"])).numpy().tolist()
    assert out == [[7592, 1010, 2088, 999], [1169, 19579, 0, 0]]


def test_graph_tokenizer_saved_model(uncased, tmp_path):
    graph = uncased.graph_tokenizer
    tf.saved_model.save(graph, str(tmp_path / "tok"))
    assert (tmp_path / "tok" / "assets" / "vocab.txt").exists()
    loaded = tf.saved_model.load(str(tmp_path / "tok"))
    assert loaded.tokenize(tf.constant(["Café!"])).to_list() == [[7668, 999]]


NASTY = [
    "İstanbul straße ﬁne Ǆemal ᾼ ΐ",
    "한국어 テスト カタカナ 中文字符 𠀀𪜀 〇",
    "e\u0301 a\u0308\u0301 \u0301alone \u0e31 x\u0345y",
    "ΑΣ. ΑΣ.Β ΑΣ\u200bΒ ΑΣ\u0301 Α\u0301Σ ΑΣ一 'ΑΣ' ΣΣ Σ.Σ ΌΣΟΣ ἈΣ",
    "a\U0001d16d\u0301\U0001d165b \U0001d15f\U0001d16e \u302f\u302e ꦏ꧀ꦏ",
    "line\u2028sep\u2029para\x85nel\x0bvt\x0cff\x1cfs",
    "\ufeffbom \u00adsoft \u200dzwj \ue000pua \U000e0041tag \U0010ffff \ufe0fvs",
    "😀👍🏽 emoji ‰ ‱ ¿¡ «» ‹› „“ — – ‐ ⁂ ¶ § © ® ° ± × ÷",
    "ｆｕｌｌｗｉｄｔｈ ＡＢＣ １２３ ？：；（）",
    "\ud800lone surrogate",
    "x" * 200 + " " + "é" * 201 + " " + "a" * 199 + "é",
    "\u0130\u0049\u0131 \u03a3\u0342 \u1e9e \u2126 \u212a \u212b",
]


@pytest.mark.parametrize("lower,strip", SETTINGS)
def test_matches_reference_on_nasty_unicode(tokenizers, lower, strip):
    full, ref = tokenizers[lower, strip]
    for text in NASTY:
        assert full.tokenize_to_ids([text]) == ref.tokenize_to_ids([text]), repr(text)
    assert full.tokenize_to_ids(NASTY) == ref.tokenize_to_ids(NASTY)


def test_matches_reference_on_corpus(uncased, reference):
    with open(CORPUS, encoding="utf-8") as f:
        lines = [next(f).rstrip("\n") for _ in range(2000)]
    assert uncased.tokenize_to_ids(lines) == reference.tokenize_to_ids(lines)


def random_ascii_texts(rng: random.Random, count: int) -> list:
    words = ["hello", "World", "unaffable", "##", "[UNK]", "[CLS]", "a.b", "don't", "U.S.A."]
    spaces = [" ", "\t", "\n", "\r", "\x0b", "\x0c", "\x1c", "\x1f", "\x00", "\x7f", "  "]
    texts = ["".join(map(chr, range(128))), "".join(map(chr, range(127, -1, -1)))]
    # words of 199-201 characters (200 bytes is the ASCII path's limit); slow in the reference
    texts += ["a" * 199 + " " + "x" * 200 + " b" + "y" * 200 + " " + "z" * 201, "Ab" * 100 + "!"]
    for _ in range(count):
        parts = []
        for _ in range(rng.randint(0, 12)):
            r = rng.random()
            if r < 0.4:
                parts.append(rng.choice(words))
            elif r < 0.8:
                parts.append("".join(chr(rng.randrange(128)) for _ in range(rng.randint(1, 8))))
            else:
                parts.append(rng.choice(spaces))
        texts.append(rng.choice(["", " "]).join(parts))
    return texts


@pytest.mark.parametrize("lower,strip", SETTINGS)
def test_ascii_fast_path_matches_reference(tokenizers, lower, strip):
    # ASCII strings skip the per-character tables (FastWordpieceTokenizer's own pre-tokenization).
    full, ref = tokenizers[lower, strip]
    texts = random_ascii_texts(random.Random(f"{lower}{strip}"), 1500)
    assert full.tokenize_to_ids(texts) == ref.tokenize_to_ids(texts)
    mixed = [t + ("é" if i % 3 == 0 else "") for i, t in enumerate(texts[:300])]  # both paths
    assert full.tokenize_to_ids(mixed) == ref.tokenize_to_ids(mixed)


def test_odd_vocab(tmp_path):
    # Empty lines, duplicates, "##" and tokens with spaces get unmatchable placeholders.
    lines = open(VOCAB, encoding="utf-8").read().splitlines()[:3000]
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(lines + ["", "##", "the", "a b", "##ab!", "x.y"]) + "\n")
    full = tokenization.FullTokenizer(str(vocab))
    ref = tokenization.ReferenceTokenizer(str(vocab))
    texts = ["the of a b x.y ##ab! [UNK]", "thé a b", "", "[electra_tf placeholder 3000]"]
    assert full.tokenize_to_ids(texts) == ref.tokenize_to_ids(texts)


def test_missing_vocab_is_a_user_error(tmp_path):
    with pytest.raises(UserError, match="vocab file not found"):
        tokenization.FullTokenizer(str(tmp_path / "nope.txt"))


@pytest.mark.slow
def test_cli(tmp_path):
    src = tmp_path / "in.txt"
    src.write_text("Hello, World!\n\nCafé 一\n", encoding="utf-8")
    out = tmp_path / "out.txt"
    cmd = [sys.executable, "-m", "electra_tf.tokenization", f"--vocab_file={VOCAB}"]

    def tokenize(source):
        return subprocess.run(
            [*cmd, f"--input={source}", f"--output={out}"], cwd=ROOT, capture_output=True, text=True
        )

    run = tokenize(src)
    assert run.returncode == 0, run.stderr
    assert out.read_text().splitlines() == ["7592 1010 2088 999", "", "7668 1740"]
    bad = tokenize(tmp_path / "missing.txt")
    assert bad.returncode == 1
    assert bad.stderr.strip().splitlines()[-1].startswith("error: input file not found")
