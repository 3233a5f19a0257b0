"""The pretraining and evaluation input: each replica's tf.data pipeline, and what a
damaged shard turns into (one line naming it, or with skip_corrupt_records a count of what is
skipped)."""

import json
import os
from typing import List, Optional

import tensorflow as tf

from electra_tf import pretraining_data
from electra_tf.errors import UserError, tf_message
from electra_tf.pretraining_data.tfrecord_check import scan_shards
from electra_tf.train.strategy import ReplicaLayout

# what reading a damaged shard raises from inside a step: a failed checksum or a truncated
# record (DataLossError), a record that does not parse as the schema's Example
READ_ERRORS = (tf.errors.DataLossError, tf.errors.InvalidArgumentError)


def input_files(config, tfrecords: Optional[str] = None, log=print) -> List[str]:
    """The TFRecords to read (`tfrecords`, default the config's), after their first records,
    their directories' dataset_info.json and the shards it lists are checked against the config;
    with skip_corrupt_records, after every shard is read once and what it cannot give counted."""
    c = config
    seq_len = c.model.max_seq_length
    skip = c.general.skip_corrupt_records
    files = pretraining_data.check_tfrecords(tfrecords or c.paths.pretrain_tfrecords, seq_len)
    for directory in sorted({os.path.dirname(f) for f in files}):
        pretraining_data.check_dataset_info(
            directory,
            c.paths.vocab_file,
            seq_len,
            c.model.do_lower_case,
            required=True,
            files=files,
            skip_corrupt_records=skip,
            log=log,
            whole_word_masking=c.task.whole_word_masking,
        )
    if skip:
        report_damage(files, seq_len, log)
    return files


def report_damage(files: List[str], max_seq_length: int, log=print) -> int:
    """skip_corrupt_records: scans every shard, logs each damaged one and the records skipped
    (those from its first unreadable record on, against dataset_info.json's count where it
    records one); returns the number skipped per pass over the data."""
    recorded = _recorded_records(files)
    damaged = scan_shards(files, max_seq_length, recorded)
    skipped = 0
    for d in damaged:
        total = recorded(d.path)
        lost = (total - d.readable) if total is not None else None
        skipped += lost or 0
        of = f"{lost} of {total} records" if lost is not None else "its remaining records"
        log(
            f"warning: skip_corrupt_records: {d.path}: record {d.readable} does not read "
            f"({d.message}): skipping {of} from there"
        )
    if damaged:
        log(
            f"skip_corrupt_records: {len(damaged)} of {len(files)} shards damaged, "
            f"{skipped} records skipped per pass over the data"
        )
    return skipped


def _recorded_records(files: List[str]):
    """path -> the record count its dataset_info.json records (None where it records none)."""
    counts = {}
    for directory in {os.path.dirname(f) for f in files}:
        info = pretraining_data.find_dataset_info(directory, below=False)
        if info is not None:
            with tf.io.gfile.GFile(info) as f:
                for shard in json.load(f).get("shards") or []:
                    counts[os.path.join(directory, shard["file"])] = shard["records"]
    return counts.get


def damaged_input_error(
    e: Exception, files: List[str], max_seq_length: int, kept: Optional[str]
) -> Optional[UserError]:
    """The one line for a read error from inside a step: the damaged shard found by reading
    them all (None when none is: the error was not the data's)."""
    damaged = scan_shards(files, max_seq_length, _recorded_records(files))
    if not damaged:
        return None
    d = damaged[0]
    more = f" (and {len(damaged) - 1} more damaged shards)" if len(damaged) > 1 else ""
    keep = f"; the last checkpoint {kept} is kept" if kept else ""
    return UserError(
        f"{d.path}: record {d.readable} does not read ({d.message}){more}{keep}: rebuild the "
        "dataset (build_pretraining_dataset.py), or set skip_corrupt_records=true to skip "
        "the rest of a damaged shard"
    )


def read_error(e: Exception, files: List[str], max_seq_length: int, kept: Optional[str]):
    """`damaged_input_error`, else a UserError with TensorFlow's message in one line."""
    found = damaged_input_error(e, files, max_seq_length, kept)
    if found is not None:
        return found
    if isinstance(e, tf.errors.DataLossError):
        return UserError(
            f"reading the pretraining data failed ({tf_message(e)}); the shards read back "
            "whole now: a passing storage fault? Re-run the same command to resume"
        )
    return None


def replica_dataset(
    config, files: List[str], replica: int, layout: ReplicaLayout, is_training: bool
) -> tf.data.Dataset:
    """Global replica `replica`'s batches of `files` (its own shard of the data, each batch
    1 / num_replicas of the global one); the loop makes one iterator per local replica."""
    c = config
    batch = c.optimization.train_batch_size if is_training else c.general.eval_batch_size
    n = layout.num_replicas
    if batch % n:
        raise UserError(f"batch size {batch} is not divisible by {n} replicas")
    ctx = tf.distribute.InputContext(
        num_input_pipelines=n, input_pipeline_id=replica, num_replicas_in_sync=n
    )
    return pretraining_data.pretraining_dataset(
        files,
        c.model.max_seq_length,
        batch // n,
        is_training=is_training,
        input_context=ctx if n > 1 else None,
        seed=int(c.general.seed),
        shuffle_buffer_size=c.general.shuffle_buffer_size,
        skip_corrupt_records=c.general.skip_corrupt_records,
    )


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
