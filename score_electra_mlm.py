"""Scores a pretraining run's discriminator as a masked language model (paper appendix G).

    python score_electra_mlm.py --data_dir=DATA_DIR --model_name=NAME [--num_batches=10]

reads the run's config.json and latest checkpoint from DATA_DIR/models/NAME/, masks batches of the
run's pretraining TFRecords as in training, and prints (and writes to
DATA_DIR/models/NAME/electra_mlm_results.json) the masked-LM accuracy of the discriminator used as
a masked LM over the generator's top-k candidates, next to the generator's own accuracy.
"""

import json

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

    from electra_tf import loading, pretraining_data, run_dir
    from electra_tf.electra_mlm import ElectraMLMScorer

    if not FLAGS.data_dir or not FLAGS.model_name:
        raise UserError("--data_dir and --model_name are required")
    config = loading.run_config(FLAGS.data_dir, FLAGS.model_name)
    model_dir = config.paths.model_dir
    if not config.objective_class.detects_replaced_tokens:
        raise UserError(
            f"{model_dir}: objective {config.objective.objective!r}"
            + ("" if config.objective.electra_objective else " with electra_objective=false")
            + " has no discriminator to score"
        )
    if config.generator.uniform_generator:
        raise UserError(f"{model_dir}: a uniform / unigram generator has no top-k to score")
    loaded = loading.load_run(config)
    model, latest = loaded.model, loaded.prefix
    files = pretraining_data.check_tfrecords(
        config.paths.pretrain_tfrecords, config.model.max_seq_length
    )
    batch_size = FLAGS.batch_size or config.run.eval_batch_size
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
        mask_prob=config.objective.mask_prob,
        seed=FLAGS.seed,
    )
    result = {k: (float(v) if isinstance(v, np.floating) else v) for k, v in result.items()}
    run_dir.RunDirectory(model_dir).write_electra_mlm_results(result)
    print(json.dumps(result, indent=2, sort_keys=True), flush=True)


if __name__ == "__main__":
    app.run(lambda argv: run_main(lambda: main(argv)))
