"""Scores a pretraining run's discriminator as a masked language model (paper appendix G).

    python score_electra_mlm.py --data_dir=DATA_DIR --model_name=NAME [--num_batches=10]

reads the run's config.json and latest checkpoint from DATA_DIR/models/NAME/, masks batches of the
run's pretraining TFRecords as in training, and prints (and writes to
DATA_DIR/models/NAME/electra_mlm_results.json) the masked-LM accuracy of the discriminator used as
a masked LM over the generator's top-k candidates, next to the generator's own accuracy.

    python score_electra_mlm.py --data_dir=DATA_DIR --checkpoint=DISC_DIR,GEN_DIR \
        [--max_seq_length=128] [--model_name=NAME]

scores another checkpoint instead: a pair of Hugging Face directories (ElectraForPreTraining,
ElectraForMaskedLM), or any checkpoint `export_model.py` reads that holds both networks and the
discriminator head (not a keras-hub preset: an ElectraBackbone has no generator). Its own config gives the model, the objective's defaults the masking (15%), and
DATA_DIR/pretrain_tfrecords/ the data (`--max_seq_length` its length; DATA_DIR/vocab.txt the special
token ids); the results are printed, and written to DATA_DIR/models/NAME/ only with `--model_name`.
"""

import json
import os

from absl import app, flags

from electra_tf.errors import UserError, run_main

flags.DEFINE_string("data_dir", None, "Holds pretrain_tfrecords/, vocab.txt and models/.")
flags.DEFINE_string("model_name", None, "The pretraining run: DATA_DIR/models/NAME.")
flags.DEFINE_string(
    "checkpoint",
    None,
    "Score this checkpoint (e.g. Hugging Face DISC_DIR,GEN_DIR) instead of the run's latest.",
)
flags.DEFINE_integer("max_seq_length", 128, "With --checkpoint: the TFRecords' sequence length.")
flags.DEFINE_integer("num_batches", 10, "Batches of the pretraining TFRecords to score.")
flags.DEFINE_integer(
    "batch_size", None, "Sequences per batch (default: the run's eval_batch_size)."
)
flags.DEFINE_integer("top_k", 100, "Generator candidates scored per masked position.")
flags.DEFINE_integer("max_sequences", 4096, "Most sequences per discriminator call.")
flags.DEFINE_integer("seed", 0, "Seed of the masking and sampling.")
FLAGS = flags.FLAGS


def main(_argv) -> None:
    import numpy as np

    from electra_tf import pretraining_data, run_dir, vocab
    from electra_tf.checkpoint import load_model
    from electra_tf.electra_mlm import ElectraMLMScorer

    if not FLAGS.data_dir or not (FLAGS.model_name or FLAGS.checkpoint):
        raise UserError("--data_dir and --model_name (or --checkpoint) are required")
    if FLAGS.checkpoint:
        from electra_tf.keras_hub.config import is_preset

        if is_preset(FLAGS.checkpoint):
            raise UserError(
                f"{FLAGS.checkpoint}: a keras-hub ElectraBackbone preset is the discriminator's "
                "encoder alone, with no generator and no heads; scoring needs both networks "
                "(score the run it was exported from, or Hugging Face DISC_DIR,GEN_DIR)"
            )
        vocab_file = os.path.join(FLAGS.data_dir, run_dir.VOCAB_FILE)  # the records' vocab
        tokens = vocab.read_vocab(vocab_file)
        loaded = load_model.load_networks(
            FLAGS.checkpoint,
            data_dir=FLAGS.data_dir,
            special_ids=vocab.special_token_ids(tokens, vocab_file),
            max_seq_length=FLAGS.max_seq_length,
        )
        absent = [p for p in load_model.PARTS if p not in loaded.parts]
        if absent:
            raise UserError(
                f"{FLAGS.checkpoint}: scoring needs both networks and both heads; it lacks "
                f"{', '.join(absent)} (Hugging Face: pass DISC_DIR,GEN_DIR)"
            )
        config = loaded.pretraining_config
        model, latest = loaded.networks, loaded.prefix
        model_dir = (
            run_dir.model_dir(FLAGS.data_dir, FLAGS.model_name) if FLAGS.model_name else None
        )
    else:
        config = load_model.run_config(FLAGS.data_dir, FLAGS.model_name)
        model_dir = config.paths.model_dir
    what = model_dir or FLAGS.checkpoint
    if not config.objective_spec.detects_replaced_tokens:
        raise UserError(
            f"{what}: objective {config.task.objective!r}"
            + ("" if config.task.electra_objective else " with electra_objective=false")
            + " has no discriminator to score"
        )
    if config.generator.uniform_generator:
        raise UserError(f"{what}: a uniform / unigram generator has no top-k to score")
    if not FLAGS.checkpoint:
        run = load_model.load_run(config)
        model, latest = run.model, run.prefix
    files = pretraining_data.check_tfrecords(
        config.paths.pretrain_tfrecords, config.model.max_seq_length
    )
    batch_size = FLAGS.batch_size or config.general.eval_batch_size
    dataset = pretraining_data.pretraining_dataset(
        files, config.model.max_seq_length, batch_size, is_training=False
    )
    scorer = ElectraMLMScorer(model, top_k=FLAGS.top_k, max_sequences=FLAGS.max_sequences)
    sums: dict = {}
    batches = 0
    for step, batch in enumerate(dataset.take(FLAGS.num_batches)):
        for k, v in scorer.score_batch(batch, step=step, seed=FLAGS.seed).items():
            sums[k] = sums.get(k, 0.0) + v
        batches += 1
    if not batches:
        raise UserError(f"no batches of {batch_size} in {config.paths.pretrain_tfrecords}")
    result = ElectraMLMScorer.accuracies(sums)
    result.update(
        checkpoint=latest,
        num_batches=batches,
        batch_size=batch_size,
        top_k=scorer.top_k,
        mask_prob=config.task.mask_prob,
        seed=FLAGS.seed,
    )
    result = {k: (float(v) if isinstance(v, np.floating) else v) for k, v in result.items()}
    if model_dir:
        run_dir.RunDirectory(model_dir).write_electra_mlm_results(result)
    print(json.dumps(result, indent=2, sort_keys=True), flush=True)


if __name__ == "__main__":
    app.run(lambda argv: run_main(lambda: main(argv)))
