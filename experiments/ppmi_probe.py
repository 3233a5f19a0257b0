"""Does a corpus carry the word statistics the movie task needs? Word vectors from a corpus by PPMI
and truncated SVD (no network), each sentence the mean of its words' vectors, scored with
probe.py's probe (logistic regression on the validation split, the same label counts, seed and L2
grid), so that the figures sit beside probe.py's figures for encoders.

    python -m experiments.ppmi_probe --corpus='CORPUS/*.txt' [--context=5|sentence|document]
        [--vocab_size=12000 --dim=64] [--out=FILE.json]
    python -m experiments.ppmi_probe --corpus=task      # the task's own training sentences (the
                                                        # validation split left out), labels unused

--context: co-occurrence within that many words either side, within a line (one sentence in the
builder's format), or within a document (lines between blank lines). Words: lower-cased runs of
letters, digits and apostrophes (the task's sentences too). Seconds to minutes on 2 cores; the
count matrix is dense (vocab_size^2 float64: 1.2 GB at 12,000).
"""

import collections
import glob
import json
import os

import numpy as np
from absl import app, flags

from electra_tf.errors import UserError, run_main
from experiments.ppmi_vectors import cooccurrence, documents, ppmi_svd, words
from experiments.probe import probe_features, read_task

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)

FLAGS = flags.FLAGS
flags.DEFINE_string("corpus", None, "Glob of corpus files (one sentence a line, blank lines "
                    "between documents), or 'task': the movie training sentences less the "
                    "validation split, each its own document.")  # fmt: skip
flags.DEFINE_string("context", "5", "A window in words, 'sentence' or 'document'.")
flags.DEFINE_integer("vocab_size", 12000, "The most frequent words get vectors.")
flags.DEFINE_integer("dim", 64, "Vector width.")
# --movie_data, --validation_split, --label_counts and --out are probe.py's flags (imported above)


def main() -> None:
    if FLAGS.context not in ("sentence", "document") and not FLAGS.context.isdigit():
        raise UserError(f"--context: a number, 'sentence' or 'document', not {FLAGS.context!r}")
    sentences, labels = read_task(os.path.join(FLAGS.movie_data, "train.tsv"))
    if FLAGS.corpus == "task":
        paths = ["task"]
        docs = [[words(s)] for s in sentences[: -FLAGS.validation_split]]
    else:
        paths = sorted(glob.glob(FLAGS.corpus or ""))
        if not paths:
            raise UserError(f"--corpus: no file matches {FLAGS.corpus!r}")
        docs = list(documents(paths))
    freq = collections.Counter(w for doc in docs for line in doc for w in line)
    index = {w: i for i, (w, _) in enumerate(freq.most_common(FLAGS.vocab_size))}
    vectors = ppmi_svd(cooccurrence(docs, index, FLAGS.context), FLAGS.dim)
    feats = np.zeros((len(sentences), FLAGS.dim), np.float32)
    for i, sentence in enumerate(sentences):
        ids = [index[w] for w in words(sentence) if w in index]
        if ids:
            feats[i] = vectors[ids].mean(0)
    accs = probe_features(feats, labels, FLAGS.validation_split, FLAGS.label_counts)
    tokens = sum(len(line) for doc in docs for line in doc)
    shown = "  ".join(f"N={c}: {a:.1f}" for c, a in accs.items())
    print(f"PPMI-SVD ({len(paths)} files, {tokens:,} words, context {FLAGS.context}): {shown}")
    if FLAGS.out:
        with open(FLAGS.out, "w", encoding="utf-8") as f:
            json.dump({"corpus": paths, "words": tokens, "context": FLAGS.context,
                       "vocab_size": len(index), "dim": FLAGS.dim, "probe": accs}, f, indent=1)  # fmt: skip


if __name__ == "__main__":
    app.run(lambda argv: run_main(main))
