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
