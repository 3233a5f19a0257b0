"""build_vocab.py on a tiny crafted corpus."""

import os
import subprocess
import sys

import pytest

import build_vocab

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TEXT = "The quick brown Fox jumps over the lazy dog.\nThe FOX sleeps; the dog runs.\n" * 20


def _corpus(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_text(TEXT + "Ünïcödé café\n", encoding="utf-8")
    return [str(path)]


def test_bert_layout(tmp_path):
    vocab = build_vocab.build_vocab(_corpus(tmp_path), vocab_size=220)
    assert len(vocab) <= 220 and len(set(vocab)) == len(vocab)
    assert vocab[0] == "[PAD]"
    assert vocab[1:100] == [f"[unused{i}]" for i in range(99)]
    assert vocab[100:104] == ["[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    assert "the" in vocab and "fox" in vocab and "." in vocab
    assert "Fox" not in vocab and "ü" not in vocab  # lower-cased, accents stripped


def test_specials_first_and_cased(tmp_path):
    vocab = build_vocab.build_vocab(
        _corpus(tmp_path), vocab_size=150, do_lower_case=False, reserve_unused=False
    )
    assert vocab[:5] == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    assert "The" in vocab and "F" in vocab and "Ü" in vocab  # case and accents kept


@pytest.mark.slow
def test_cli_writes_file_and_reports_missing_corpus(tmp_path):
    _corpus(tmp_path)
    out = tmp_path / "out" / "vocab.txt"
    script = os.path.join(ROOT, "build_vocab.py")
    ok = subprocess.run(
        [sys.executable, script, f"--corpus={tmp_path}/*.txt", f"--output_file={out}"]
        + ["--vocab_size=220"],
        check=False,
        capture_output=True,
        text=True,
    )
    assert ok.returncode == 0, ok.stderr
    lines = out.read_text(encoding="utf-8").splitlines()
    assert lines[0] == "[PAD]" and lines[100] == "[UNK]" and "dog" in lines
    bad = subprocess.run(
        [sys.executable, script, f"--corpus={tmp_path}/nothing*", f"--output_file={out}"],
        check=False,
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 1
    assert (
        bad.stderr.strip().splitlines()[-1]
        == f"error: --corpus={tmp_path}/nothing* matches no file"
    )


def test_english_vocab_is_unchanged_by_the_cjk_option(tmp_path):
    # the learned tokens of test_bert_layout's vocab as built before --cjk_char_tokens existed
    # (a897e3a): the option is off by default
    learned = [".", ";", *"abcdefghijklmnopqrstuvwxyz", "the", "dog", "fox", "brown", "jumps",
               "lazy", "over", "quick", "runs", "sleeps", "##.", "##;",
               *(f"##{c}" for c in "abcdefghijklmnopqrstuvwxyz"), "cafe", "unicode"]  # fmt: skip
    assert build_vocab.build_vocab(_corpus(tmp_path), vocab_size=220)[104:] == learned


CHINESE_LINES = os.path.join(ROOT, "tests", "data", "chinese", "lines.txt")


def test_cjk_characters_are_tokens_of_their_own():
    from collections import Counter

    from electra_tf.tokenization.reference import is_chinese_char

    text = open(CHINESE_LINES, encoding="utf-8").read()
    counts = Counter(c for c in text if is_chinese_char(ord(c)))
    vocab = build_vocab.build_vocab([CHINESE_LINES], vocab_size=len(counts) + 104 + 300,
                                    cjk_char_tokens=True)  # fmt: skip
    # right after the reserved ids, every CJK character, most frequent first (ties by code point)
    chars = sorted(counts, key=lambda c: (-counts[c], ord(c)))
    assert vocab[104 : 104 + len(chars)] == chars
    assert vocab[104] == "的"
    rest = vocab[104 + len(chars) :]
    assert 0 < len(rest) <= 300 and not any(any(map(is_chinese_char, map(ord, t))) for t in rest)
    # WordPiece for the rest: full-width punctuation and digits, Latin words, ## pieces
    assert {"，", "。", "％", "０", "１"} <= set(rest) and any(t.startswith("##") for t in rest)
    with pytest.raises(build_vocab.UserError, match=f"no room for the corpus's {len(chars)} CJK"):
        build_vocab.build_vocab([CHINESE_LINES], vocab_size=len(chars), cjk_char_tokens=True)
