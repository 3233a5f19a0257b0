"""The training and evaluation input: one plain tf.data iterator per local replica."""

import os
from typing import List, Optional

import tensorflow as tf

from electra_tf import pretraining_data
from electra_tf.errors import UserError
from electra_tf.train.strategy import ReplicaLayout


def replica_iterators(
    config, layout: ReplicaLayout, is_training: bool, tfrecords: Optional[str] = None
) -> List:
    """One iterator per local replica (checkpointable, unlike tf.distribute's distributed
    iterators in TF 2.21), each reading its own shard of the data (`tfrecords`, default the
    config's), after the TFRecords and their dataset_info.json are checked against the config."""
    c = config
    seq_len = c.model.max_seq_length
    files = pretraining_data.check_tfrecords(tfrecords or c.paths.pretrain_tfrecords, seq_len)
    pretraining_data.check_dataset_info(
        os.path.dirname(files[0]), c.paths.vocab_file, seq_len, c.model.do_lower_case
    )
    batch = c.optimizer.train_batch_size if is_training else c.run.eval_batch_size
    n = layout.num_replicas
    if batch % n:
        raise UserError(f"batch size {batch} is not divisible by {n} replicas")
    iterators = []
    for i in range(layout.num_local):
        ctx = tf.distribute.InputContext(
            num_input_pipelines=n,
            input_pipeline_id=layout.first_local_replica + i,
            num_replicas_in_sync=n,
        )
        with tf.device("/cpu:0"):
            ds = pretraining_data.pretraining_dataset(
                files,
                seq_len,
                batch // n,
                is_training=is_training,
                input_context=ctx if n > 1 else None,
                seed=int(c.scale.seed),
                shuffle_buffer_size=c.run.shuffle_buffer_size,
            )
            iterators.append(iter(ds))
    return iterators


def run_on_replicas(strategy, layout: ReplicaLayout, fn, iterators):
    """Calls fn on each replica with the next batch of that replica's iterator."""
    batches = [next(it) for it in iterators]
    if len(batches) == 1 and layout.num_replicas == 1:
        return strategy.run(fn, args=(batches[0],))
    first = layout.first_local_replica
    values = strategy.experimental_distribute_values_from_function(
        lambda ctx: batches[ctx.replica_id_in_sync_group - first]
    )
    return strategy.run(fn, args=(values,))
