"""Exports a checkpoint (this project's or an original google-research TF1 one, detected
automatically) as a SavedModel with serving signatures, or in the original's checkpoint layout.

    python export_model.py --checkpoint=DATA_DIR/models/NAME --export_dir=OUT \\
        [--head=discriminator|generator|encoder] [--format=saved_model|original_checkpoint] \\
        [--model_config=CONFIG.json] [--vocab_file=vocab.txt] [--max_seq_length=128]

The model config defaults to the `config.json` (or `bert_config.json`) beside the checkpoint and
the vocab to the `vocab.txt` beside it. The SavedModel's signatures: `serving_default` (int32
input_ids, input_mask, segment_ids), `serve_text` (strings) and `serve_text_pair` (two string
batches); loading it needs `import tensorflow_text`.
"""

import os

from absl import app, flags

from electra_tf.errors import UserError, run_main

flags.DEFINE_string("checkpoint", None, "A checkpoint prefix or a directory (its latest).")
flags.DEFINE_string(
    "model_config",
    None,
    "BERT JSON model config, or a run's config.json; default: the one beside the checkpoint.",
)
flags.DEFINE_enum("head", "discriminator", ["discriminator", "generator", "encoder"], "Head.")
flags.DEFINE_string("export_dir", None, "Output directory (must not exist or be empty).")
flags.DEFINE_enum("format", "saved_model", ["saved_model", "original_checkpoint"], "Format.")
flags.DEFINE_string(
    "vocab_file", None, "WordPiece vocab; default: vocab.txt beside the checkpoint."
)
flags.DEFINE_integer("max_seq_length", 128, "Truncation/padding length of the text signatures.")
flags.DEFINE_bool(
    "do_lower_case", None, "Lower-case text in serve_text; default: the run's, else true."
)
FLAGS = flags.FLAGS


def main() -> None:
    if not FLAGS.checkpoint or not FLAGS.export_dir:
        raise UserError("--checkpoint and --export_dir are required")
    if os.path.isdir(FLAGS.export_dir) and os.listdir(FLAGS.export_dir):  # before importing TF
        raise UserError(f"{FLAGS.export_dir}: the export directory is not empty; choose a new one")
    from electra_tf import checkpoints, export

    export.check_export_dir(FLAGS.export_dir)
    prefix = checkpoints.resolve_checkpoint(FLAGS.checkpoint)
    vocab_file = FLAGS.vocab_file or export.find_beside(prefix, ("vocab.txt",))
    if FLAGS.format == "saved_model":
        if vocab_file is None:
            raise UserError(f"{prefix}: no vocab.txt beside the checkpoint; pass --vocab_file")
        loaded = export.load_networks(prefix, FLAGS.model_config, FLAGS.head)
        print(loaded.report.summary(), flush=True)
        export.export_saved_model(
            loaded,
            FLAGS.head,
            FLAGS.export_dir,
            vocab_file,
            FLAGS.max_seq_length,
            FLAGS.do_lower_case,
        )
        print(f"wrote the {FLAGS.head} SavedModel to {FLAGS.export_dir}")
    else:
        loaded = export.load_networks(prefix, FLAGS.model_config, None)
        print(loaded.report.summary(), flush=True)
        names = export.export_original_checkpoint(loaded, FLAGS.export_dir, vocab_file)
        print(f"wrote {len(names)} variables ({', '.join(loaded.parts)}) to {FLAGS.export_dir}")


if __name__ == "__main__":
    app.run(lambda argv: run_main(main))
