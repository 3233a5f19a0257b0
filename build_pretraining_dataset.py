"""Corpus text -> sharded pretraining TFRecords (input_ids, input_mask, segment_ids), as the
original.

python build_pretraining_dataset.py --corpus_dir=data/corpus --vocab_file=data/vocab/vocab.txt \
    --output_dir=/tmp/electra_data/pretrain_tfrecords --num_out_files=8 --num_processes=2

The corpus is one sentence per line with blank lines between documents
(--blanks_separate_docs=false: each file is one document). Writes pretrain_data.tfrecord-I-of-N,
dataset_info.json and token_counts.txt: the shards under temporary names until all are written,
dataset_info.json last. Re-running the same command after a crash (the directory still holds
.build_incomplete) replaces what the crashed build left and gives the same dataset.

python build_pretraining_dataset.py --index_only=true --output_dir=DIR --vocab_file=V \
    --max_seq_length=128
writes a dataset_info.json for TFRecords made elsewhere (the original's builder), which the
trainer requires.

With --word_segmenter=jieba (Chinese; `pip install -e '.[chinese]'`) each token also records
whether a segmented word starts there (a `word_starts` feature), and `whole_word_masking` masks
those words whole, all their characters together (docs/PRETRAINING.md#chinese).
"""

import glob
import importlib
import os

from absl import app, flags

from electra_tf import data_layout
from electra_tf.errors import UserError, run_main

FLAGS = flags.FLAGS
flags.DEFINE_string(
    "corpus_dir",
    None,
    "Directory of text files (all its files, sorted), or a single file, or a glob.",
)
flags.DEFINE_string("vocab_file", None, "WordPiece vocab file (one token per line).")
flags.DEFINE_string("output_dir", None, "Where to write the TFRecords.")
flags.DEFINE_integer("max_seq_length", 128, "Number of tokens per example.")
flags.DEFINE_integer("num_processes", 1, "Parallelize across this many processes (one job each).")
flags.DEFINE_integer("num_out_files", 1000, "Number of output TFRecord files (shards).")
flags.DEFINE_bool(
    "blanks_separate_docs", True, "Blank lines separate documents (false: each file is a document)."
)
flags.DEFINE_bool(
    "carry_overflow", False,
    "The tokens an example trims start the next example of the document (false: dropped, as the "
    "original).",
)  # fmt: skip
flags.DEFINE_bool("do_lower_case", True, "Lower-case the input text (BERT uncased).")
flags.DEFINE_bool("strip_accents", True, "Strip accents (only when lower-casing).")
flags.DEFINE_integer("seed", 0, "Seed of every random choice (reproducible output).")
flags.DEFINE_bool("overwrite", False, "Replace the TFRecords already in --output_dir.")
flags.DEFINE_bool(
    "index_only", False, "Only write dataset_info.json for the TFRecords in --output_dir."
)
flags.DEFINE_enum(
    "word_segmenter", None, ["jieba"],
    "Record a word segmenter's word boundaries (a word_starts feature) for whole-word masking of "
    "text without spaces (Chinese: jieba, pip install -e '.[chinese]').",
)  # fmt: skip


def _quick_checks() -> None:
    """The common mistakes, found before the slow TensorFlow import (build_dataset checks them all;
    the names come from `electra_tf.data_layout`, which imports no TF)."""
    corpus, vocab_file, output_dir = FLAGS.corpus_dir, FLAGS.vocab_file, FLAGS.output_dir
    segmenter = FLAGS.word_segmenter
    if segmenter and not _importable(segmenter):
        raise UserError(
            f"--word_segmenter={segmenter} needs the {segmenter} package, an optional dependency: "
            "pip install -e '.[chinese]'"
        )
    if "://" not in corpus and not os.path.exists(corpus) and not glob.glob(corpus):
        raise UserError(f"corpus not found: {corpus} (no file, directory or glob match)")
    if "://" not in vocab_file and not os.path.isfile(vocab_file):
        raise UserError(f"vocab file not found: {vocab_file}")
    existing = glob.glob(data_layout.tfrecord_glob(glob.escape(output_dir)))
    # a build that did not finish left its marker and no dataset_info.json: a re-run replaces it
    interrupted = os.path.exists(os.path.join(output_dir, data_layout.BUILD_MARKER)) and not (
        os.path.exists(os.path.join(output_dir, data_layout.DATASET_INFO_FILE))
    )
    if "://" not in output_dir and existing and not FLAGS.overwrite and not interrupted:
        raise UserError(
            f"output_dir {output_dir} already holds {len(existing)} "
            f"{data_layout.TFRECORD_PREFIX}* files; "
            "pass --overwrite=true to replace them"
        )


def _importable(module: str) -> bool:
    try:
        importlib.import_module(module)  # jieba imports in ~0.1 s (its dictionary loads later)
        return True
    except ImportError:
        return False


def main(argv) -> None:
    if len(argv) > 1:
        raise UserError(f"unexpected arguments: {' '.join(argv[1:])}")
    required = ("vocab_file", "output_dir") + (() if FLAGS.index_only else ("corpus_dir",))
    for name in ("corpus_dir", "vocab_file", "output_dir"):
        if name in required and not FLAGS[name].value:
            raise UserError(f"--{name} is required")
    if FLAGS.index_only:
        from electra_tf import pretraining_data

        pretraining_data.index_dataset(
            FLAGS.output_dir,
            FLAGS.vocab_file,
            FLAGS.max_seq_length,
            do_lower_case=FLAGS.do_lower_case,
            overwrite=FLAGS.overwrite,
        )
        return
    _quick_checks()
    from electra_tf import pretraining_data

    pretraining_data.build_dataset(
        FLAGS.corpus_dir,
        FLAGS.vocab_file,
        FLAGS.output_dir,
        max_seq_length=FLAGS.max_seq_length,
        num_processes=FLAGS.num_processes,
        num_out_files=FLAGS.num_out_files,
        blanks_separate_docs=FLAGS.blanks_separate_docs,
        do_lower_case=FLAGS.do_lower_case,
        strip_accents=FLAGS.strip_accents,
        seed=FLAGS.seed,
        overwrite=FLAGS.overwrite,
        carry_overflow=FLAGS.carry_overflow,
        word_segmenter=FLAGS.word_segmenter,
    )


if __name__ == "__main__":
    app.run(lambda argv: run_main(lambda: main(argv)))
