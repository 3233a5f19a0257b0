"""`check_tfrecords`: a dataset's first records against the schema, before training starts;
`scan_shards`: every record of the shards, to find (after a read error, or with
skip_corrupt_records) which shard is damaged and from which record on."""

import concurrent.futures
import dataclasses
import struct
from collections.abc import Sequence

import numpy as np
import tensorflow as tf
from google.protobuf.message import DecodeError

from electra_tf.errors import UserError, tf_message
from electra_tf.pretraining_data.encoding import FEATURE_NAMES, WORD_STARTS
from electra_tf.pretraining_data.input_pipeline import expand_file_patterns, parse_records

_SCAN_BATCH = 1024


def _read_first_record(path: str) -> bytes | None:
    """The first record's bytes (None for an empty file), read from the TFRecord framing: a
    uint64 length, its crc, the data (crcs not checked: only the schema is)."""
    with tf.io.gfile.GFile(path, "rb") as f:
        header = f.read(12)
        if not header:
            return None
        if len(header) < 12:
            raise UserError(f"{path} is not a TFRecord file (truncated header)")
        (length,) = struct.unpack("<Q", header[:8])
        # a length past the file's end (another file's bytes read as a header) is refused before
        # reading: reading it would ask for up to 2^64 bytes
        if length > f.size() - 16:
            raise UserError(f"{path} is not an uncompressed TFRecord file (bad record length)")
        data = f.read(length)
        if len(data) != length:
            raise UserError(f"{path} is not an uncompressed TFRecord file (bad record length)")
        return data


def check_tfrecords(files: str | Sequence[str], max_seq_length: int) -> list:
    """Checks the first record of each file against the schema; returns the sorted file list.

    Raises `UserError` (naming the file) when nothing matches, a feature is missing or extra, or a
    feature is not int64 of length max_seq_length, or some files have `word_starts` and others not.
    Empty files are allowed (a small corpus leaves some shards empty), but not all of them.
    """
    paths = expand_file_patterns(files)
    num_records = 0
    with_starts: dict = {}  # has word_starts -> the first such file
    for path in paths:
        data = _read_first_record(path)
        if data is None:
            continue
        num_records += 1
        try:
            example = tf.train.Example.FromString(data)
        except DecodeError as e:
            raise UserError(f"{path}: first record is not a tf.train.Example ({e})") from None
        feature = example.features.feature
        names = set(feature.keys())
        if names - {WORD_STARTS} != set(FEATURE_NAMES):
            missing = sorted(set(FEATURE_NAMES) - names)
            extra = sorted(names - set(FEATURE_NAMES) - {WORD_STARTS})
            raise UserError(
                f"{path}: expected features {list(FEATURE_NAMES)}, "
                f"missing {missing}, unexpected {extra}"
            )
        with_starts.setdefault(WORD_STARTS in names, path)
        if len(with_starts) > 1:
            raise UserError(
                f"{with_starts[True]} has {WORD_STARTS} (built with a word segmenter) and "
                f"{with_starts[False]} has not: the files are from different builds"
            )
        for name in sorted(names):
            kind = feature[name].WhichOneof("kind")
            if kind != "int64_list":
                raise UserError(f"{path}: feature {name} is {kind}, expected int64_list")
            length = len(feature[name].int64_list.value)
            if length != max_seq_length:
                raise UserError(
                    f"{path}: feature {name} has length {length}, expected max_seq_length "
                    f"{max_seq_length}"
                )
    if num_records == 0:
        raise UserError(f"all {len(paths)} pretraining TFRecord files are empty ({paths[0]}, ...)")
    return paths


@dataclasses.dataclass(frozen=True)
class ShardDamage:
    """A shard that does not read to its end: `readable` records, then `message` (TensorFlow's,
    in one line) at record index `readable`."""

    path: str
    readable: int
    message: str


def _count(ds: tf.data.Dataset) -> int:
    return int(ds.reduce(np.int64(0), lambda n, _: n + 1).numpy())


def scan_shard(path: str, max_seq_length: int, expected: int | None = None) -> ShardDamage | None:
    """Reads every record of a shard (their checksums) and parses it as the input pipeline does;
    where that fails, the index of the first record that does not read or parse. A file cut
    inside a record's header reads as a shorter file: `expected` (the records it should hold)
    tells."""
    records = tf.data.TFRecordDataset(path, buffer_size=1 << 22)
    batches = records.batch(_SCAN_BATCH).map(lambda r: parse_records(r, max_seq_length))
    done = 0
    try:
        for batch in batches:
            done += int(batch["input_ids"].shape[0])
        if expected is not None and done < expected:
            return ShardDamage(path, done, f"the file ends after {done} of {expected} records")
        return None
    except tf.errors.DataLossError as e:
        return ShardDamage(
            path, _count(tf.data.TFRecordDataset(path).ignore_errors()), tf_message(e)
        )
    except tf.errors.InvalidArgumentError as e:  # a record that is not the schema's Example
        index = done
        try:
            for _ in records.skip(done).map(lambda r: parse_records([r], max_seq_length)):
                index += 1
        except (tf.errors.InvalidArgumentError, tf.errors.DataLossError):
            pass
        return ShardDamage(path, index, tf_message(e))


def scan_shards(
    paths: Sequence[str], max_seq_length: int, expected=lambda path: None, threads: int = 4
) -> list:
    """`scan_shard` of every path (in threads; `expected(path)`: its record count, or None), the
    damaged ones in path order."""
    with concurrent.futures.ThreadPoolExecutor(max(1, min(threads, len(paths)))) as pool:
        found = list(pool.map(lambda p: scan_shard(p, max_seq_length, expected(p)), paths))
    return [d for d in found if d is not None]
