"""Scores a pretraining run's discriminator as a masked language model (paper appendix G).

    python score_electra_mlm.py --data_dir=DATA_DIR --model_name=NAME [--num_batches=10]

reads the run's config.json and latest checkpoint from DATA_DIR/models/NAME/, masks batches of the
run's pretraining TFRecords as in training, and prints (and writes to
DATA_DIR/models/NAME/electra_mlm_results.json) the masked-LM accuracy of the discriminator used as
a masked LM over the generator's top-k candidates, next to the generator's own accuracy.
"""

import json
import os

from absl import app, flags

from electra_tf.errors import UserError, run_main

flags.DEFINE_string("data_dir", None, "Holds pretrain_tfrecords/, vocab.txt and models/.")
flags.DEFINE_string("model_name", None, "The pretraining run: DATA_DIR/models/NAME.")
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
    import tensorflow as tf

    from electra_tf import pretraining_data
    from electra_tf.configs import PRETRAINING_DEFAULTS, PretrainingConfig, read_json
    from electra_tf.electra_mlm import ElectraMLMScorer
    from electra_tf.tokenization import load_vocab
    from electra_tf.training import build_pretrainer, special_token_ids

    if not FLAGS.data_dir or not FLAGS.model_name:
        raise UserError("--data_dir and --model_name are required")
    model_dir = os.path.join(FLAGS.data_dir, "models", FLAGS.model_name)
    saved = read_json(os.path.join(model_dir, "config.json"))
    hparams = {k: v for k, v in saved.items() if k in PRETRAINING_DEFAULTS}
    hparams["model_dir"] = model_dir
    config = PretrainingConfig(FLAGS.model_name, FLAGS.data_dir, **hparams)
    if config.objective not in ("electra", "electra_15") or not config.electra_objective:
        raise UserError(
            f"{model_dir}: objective {config.objective!r} has no discriminator to score"
        )
    if config.uniform_generator:
        raise UserError(f"{model_dir}: a uniform / unigram generator has no top-k to score")
    vocab_file = config.vocab_file
    if not os.path.exists(vocab_file):
        vocab_file = os.path.join(model_dir, "vocab.txt")
    vocab = load_vocab(vocab_file)
    vocab_size = config.vocab_size or len(vocab)
    model = build_pretrainer(config, vocab_size, special_token_ids(vocab, vocab_file))
    latest = tf.train.latest_checkpoint(model_dir)
    if latest is None:
        raise UserError(f"no checkpoint in {model_dir}")
    status = tf.train.Checkpoint(model=model).restore(latest)
    try:
        status.assert_existing_objects_matched()
    except AssertionError as e:
        raise UserError(f"{latest} does not match the run's config.json ({e})") from None
    status.expect_partial()
    files = pretraining_data.check_tfrecords(config.pretrain_tfrecords, config.max_seq_length)
    batch_size = FLAGS.batch_size or config.eval_batch_size
    dataset = pretraining_data.pretraining_dataset(
        files, config.max_seq_length, batch_size, is_training=False
    )
    scorer = ElectraMLMScorer(model, top_k=FLAGS.top_k, max_sequences=FLAGS.max_sequences)
    sums: dict = {}
    batches = 0
    for step, batch in enumerate(dataset.take(FLAGS.num_batches)):
        for k, v in scorer.score_batch(batch, step=step, seed=FLAGS.seed).items():
            sums[k] = sums.get(k, 0.0) + v
        batches += 1
    if not batches:
        raise UserError(f"no batches of {batch_size} in {config.pretrain_tfrecords}")
    result = ElectraMLMScorer.accuracies(sums)
    result.update(
        checkpoint=latest,
        num_batches=batches,
        batch_size=batch_size,
        top_k=scorer.top_k,
        mask_prob=config.mask_prob,
        seed=FLAGS.seed,
    )
    result = {k: (float(v) if isinstance(v, np.floating) else v) for k, v in result.items()}
    with open(os.path.join(model_dir, "electra_mlm_results.json"), "w", encoding="utf-8") as f:
        json.dump(result, f, indent=2, sort_keys=True)
        f.write("\n")
    print(json.dumps(result, indent=2, sort_keys=True), flush=True)


if __name__ == "__main__":
    app.run(lambda argv: run_main(lambda: main(argv)))
