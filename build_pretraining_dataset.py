"""Corpus text -> sharded pretraining TFRecords (input_ids, input_mask, segment_ids), as the
original.

python build_pretraining_dataset.py --corpus_dir=data/corpus --vocab_file=data/vocab/vocab.txt \
    --output_dir=/tmp/electra_data/pretrain_tfrecords --num_out_files=8 --num_processes=2

The corpus is one sentence per line with blank lines between documents
(--blanks_separate_docs=false: each file is one document). Writes pretrain_data.tfrecord-I-of-N,
dataset_info.json and token_counts.txt.
"""

import glob
import os

from absl import app, flags

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
flags.DEFINE_bool("do_lower_case", True, "Lower-case the input text (BERT uncased).")
flags.DEFINE_bool("strip_accents", True, "Strip accents (only when lower-casing).")
flags.DEFINE_integer("seed", 0, "Seed of every random choice (reproducible output).")
flags.DEFINE_bool("overwrite", False, "Replace the TFRecords already in --output_dir.")


def _quick_checks() -> None:
    """The common mistakes, found before the slow TensorFlow import (build_dataset checks them all;
    the shard name is spelt out because importing `electra_tf.pretraining_data` imports TF)."""
    corpus, vocab_file, output_dir = FLAGS.corpus_dir, FLAGS.vocab_file, FLAGS.output_dir
    if "://" not in corpus and not os.path.exists(corpus) and not glob.glob(corpus):
        raise UserError(f"corpus not found: {corpus} (no file, directory or glob match)")
    if "://" not in vocab_file and not os.path.isfile(vocab_file):
        raise UserError(f"vocab file not found: {vocab_file}")
    existing = glob.glob(os.path.join(glob.escape(output_dir), "pretrain_data.tfrecord*"))
    if "://" not in output_dir and existing and not FLAGS.overwrite:
        raise UserError(
            f"output_dir {output_dir} already holds {len(existing)} pretrain_data.tfrecord* files; "
            "pass --overwrite=true to replace them"
        )


def main(argv) -> None:
    if len(argv) > 1:
        raise UserError(f"unexpected arguments: {' '.join(argv[1:])}")
    for name in ("corpus_dir", "vocab_file", "output_dir"):
        if not FLAGS[name].value:
            raise UserError(f"--{name} is required")
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
    )


if __name__ == "__main__":
    app.run(lambda argv: run_main(lambda: main(argv)))
