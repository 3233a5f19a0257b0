"""Reading a dataset: its TFRecord files, the tf.data input pipeline, and plain iteration."""

import os
from collections.abc import Iterable, Sequence

import tensorflow as tf

from electra_tf.errors import UserError
from electra_tf.pretraining_data.encoding import FEATURE_NAMES, WORD_STARTS
from electra_tf.pretraining_data.layout import TFRECORD_PREFIX


def expand_file_patterns(file_patterns: str | Sequence[str]) -> list:
    """Comma-separated globs (or a list; a directory means its pretrain_data.tfrecord*) -> sorted
    files."""
    patterns = file_patterns.split(",") if isinstance(file_patterns, str) else list(file_patterns)
    files: list = []
    for pattern in (p.strip() for p in patterns):
        if not pattern:
            continue
        if tf.io.gfile.isdir(pattern):
            pattern = os.path.join(pattern, TFRECORD_PREFIX + "*")
        matches = tf.io.gfile.glob(pattern)
        if not matches:
            raise UserError(f"no pretraining TFRecords match {pattern}")
        files.extend(matches)
    if not files:
        raise UserError(f"no pretraining TFRecords match {file_patterns!r}")
    return sorted(set(files))


def pretraining_dataset(
    file_patterns: str | Sequence[str],
    max_seq_length: int,
    batch_size: int,
    is_training: bool,
    input_context: tf.distribute.InputContext | None = None,
    seed: int | None = None,
    num_cpu_threads: int = 4,
    shuffle_buffer_size: int = 100,
    skip_corrupt_records: bool = False,
    features: Sequence[str] | None = None,
) -> tf.data.Dataset:
    """The pretraining input pipeline of the original, as a tf.data.Dataset.

    Files (comma-separated globs, a list, or a directory) are sharded over `input_context`'s input
    pipelines (by file; by record when there are fewer files than pipelines). For training:
    repeat, shuffle the files, interleave `cycle_length=min(num_cpu_threads, n_files)` files
    (deterministic when `seed` is given), shuffle records (`shuffle_buffer_size`). For evaluation:
    one pass in file order, no shuffling. Then parse, batch `batch_size` (per input pipeline,
    drop_remainder) and prefetch. `skip_corrupt_records`: a shard's records from its first
    corrupt or truncated one on are skipped (`tfrecord_check.scan_shards` counts them).
    `features`: the int64 features to read (default: those of the first record,
    `record_features`: the three, and `word_starts` where the build recorded word boundaries).

    Returns:
        A dataset of dicts {input_ids, input_mask, segment_ids (, word_starts)}, int32
        [batch_size, max_seq_length].
    """
    files = expand_file_patterns(file_patterns)
    names = tuple(features) if features is not None else record_features(files)
    num_pipelines = input_context.num_input_pipelines if input_context is not None else 1
    pipeline_id = input_context.input_pipeline_id if input_context is not None else 0
    shard_files = num_pipelines > 1 and len(files) >= num_pipelines
    if shard_files:
        files = files[pipeline_id::num_pipelines]

    d = tf.data.Dataset.from_tensor_slices(tf.constant(files))
    if is_training:
        d = d.repeat()
        d = d.shuffle(buffer_size=len(files), seed=seed)
    d = d.interleave(
        _read_skipping_damage if skip_corrupt_records else tf.data.TFRecordDataset,
        cycle_length=min(num_cpu_threads, len(files)),
        num_parallel_calls=tf.data.AUTOTUNE,
        deterministic=(not is_training) or seed is not None,
    )
    if num_pipelines > 1 and not shard_files:
        d = d.shard(num_pipelines, pipeline_id)
    if is_training:
        d = d.shuffle(buffer_size=shuffle_buffer_size, seed=seed)

    d = d.batch(batch_size, drop_remainder=True)
    d = d.map(
        lambda r: parse_records(r, max_seq_length, names), num_parallel_calls=tf.data.AUTOTUNE
    )
    return d.prefetch(tf.data.AUTOTUNE)


def _read_skipping_damage(path: tf.Tensor) -> tf.data.Dataset:
    # TFRecordDataset moves on to its next file after a corrupt or truncated record, so that
    # ignore_errors skips the rest of a damaged shard (and nothing else)
    return tf.data.TFRecordDataset(path).ignore_errors()


def parse_records(
    records: tf.Tensor, max_seq_length: int, names: Sequence[str] = FEATURE_NAMES
) -> dict:
    """A batch of serialized records -> {input_ids, input_mask, segment_ids}, int32 (and the
    other `names`)."""
    name_to_features = {name: tf.io.FixedLenFeature([max_seq_length], tf.int64) for name in names}
    parsed = tf.io.parse_example(records, name_to_features)
    return {name: tf.cast(parsed[name], tf.int32) for name in names}


def record_features(files: Sequence[str]) -> tuple:
    """The features to read from a dataset's files: `FEATURE_NAMES`, and `word_starts` where the
    first record (of the first file that has one) holds it (`tfrecord_check.check_tfrecords`
    checks that every file agrees)."""
    for path in files:
        for record in tf.data.TFRecordDataset(path).take(1):
            feature = tf.train.Example.FromString(record.numpy()).features.feature
            return FEATURE_NAMES + ((WORD_STARTS,) if WORD_STARTS in feature else ())
    return FEATURE_NAMES


def iter_examples(files: str | Sequence[str]) -> Iterable[dict]:
    """Every record of the files in order, as dicts of int lists (for tests and inspection)."""
    for path in expand_file_patterns(files):
        for record in tf.data.TFRecordDataset(path).as_numpy_iterator():
            feature = tf.train.Example.FromString(record).features.feature
            yield {name: list(feature[name].int64_list.value) for name in feature}
