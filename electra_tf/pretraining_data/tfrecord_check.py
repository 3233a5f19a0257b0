"""`check_tfrecords`: a dataset's first records against the schema, before training starts."""

import struct
from collections.abc import Sequence

import tensorflow as tf
from google.protobuf.message import DecodeError

from electra_tf.errors import UserError
from electra_tf.pretraining_data.encoding import FEATURE_NAMES
from electra_tf.pretraining_data.input_pipeline import expand_file_patterns


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
        data = f.read(length)
        if len(data) != length:
            raise UserError(f"{path} is not an uncompressed TFRecord file (bad record length)")
        return data


def check_tfrecords(files: str | Sequence[str], max_seq_length: int) -> list:
    """Checks the first record of each file against the schema; returns the sorted file list.

    Raises `UserError` (naming the file) when nothing matches, a feature is missing or extra, or a
    feature is not int64 of length max_seq_length. Empty files are allowed (a small corpus leaves
    some shards empty), but not all of them.
    """
    paths = expand_file_patterns(files)
    num_records = 0
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
        if names != set(FEATURE_NAMES):
            missing = sorted(set(FEATURE_NAMES) - names)
            extra = sorted(names - set(FEATURE_NAMES))
            raise UserError(
                f"{path}: expected features {list(FEATURE_NAMES)}, "
                f"missing {missing}, unexpected {extra}"
            )
        for name in FEATURE_NAMES:
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
