"""`dataset_info.json` and `token_counts.txt`: what a build records, and the trainer's checks.

`dataset_info.json` holds the counts, the vocab's sha256 and the tokenizer settings of a build;
`token_counts.txt` how often each vocab id occurs in the written `input_ids`, padding excluded (one
integer per line, line i = id i). Both go through tf.io.gfile (datasets may be remote), and the
info keeps the builder's key order.
"""

import hashlib
import json
import os

import numpy as np
import tensorflow as tf

from electra_tf.errors import UserError
from electra_tf.pretraining_data.layout import DATASET_INFO_FILE, TFRECORD_DIR, TOKEN_COUNTS_FILE


def file_sha256(path: str) -> str:
    digest = hashlib.sha256()
    with tf.io.gfile.GFile(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def write_token_counts(output_dir: str, counts: np.ndarray) -> None:
    with tf.io.gfile.GFile(os.path.join(output_dir, TOKEN_COUNTS_FILE), "w") as f:
        f.write("".join(f"{c}\n" for c in counts.tolist()))


def read_token_counts(path: str) -> np.ndarray:
    """token_counts.txt (or the directory holding it) -> int64 [vocab_size]."""
    if tf.io.gfile.isdir(path):
        path = os.path.join(path, TOKEN_COUNTS_FILE)
    if not tf.io.gfile.exists(path):
        raise UserError(f"token counts file not found: {path}")
    with tf.io.gfile.GFile(path, "r") as f:
        return np.array([int(line) for line in f if line.strip()], np.int64)


def write_dataset_info(output_dir: str, info: dict) -> None:
    with tf.io.gfile.GFile(os.path.join(output_dir, DATASET_INFO_FILE), "w") as f:
        f.write(json.dumps(info, indent=2) + "\n")


def find_dataset_info(data_dir_or_tfrecord_dir: str) -> str | None:
    """The dataset_info.json in the directory or in its pretrain_tfrecords/ subdirectory, if any."""
    for path in (
        os.path.join(data_dir_or_tfrecord_dir, DATASET_INFO_FILE),
        os.path.join(data_dir_or_tfrecord_dir, TFRECORD_DIR, DATASET_INFO_FILE),
    ):
        if tf.io.gfile.exists(path):
            return path
    return None


def check_dataset_info(
    data_dir_or_tfrecord_dir: str,
    vocab_file: str,
    max_seq_length: int,
    do_lower_case: bool,
) -> dict | None:
    """Compares dataset_info.json with the trainer's settings; returns it (None for datasets
    without one).

    Raises `UserError` when the dataset was built with another vocab (sha256), another
    max_seq_length or another lower-casing. Datasets built by the original code have no
    dataset_info.json: nothing to check.
    """
    path = find_dataset_info(data_dir_or_tfrecord_dir)
    if path is None:
        return None
    try:
        with tf.io.gfile.GFile(path, "r") as f:
            info = json.load(f)
    except ValueError as e:
        raise UserError(f"{path} is not valid JSON ({e})") from None
    dataset = os.path.dirname(path)
    if not tf.io.gfile.exists(vocab_file):
        raise UserError(f"vocab file not found: {vocab_file}")
    sha = file_sha256(vocab_file)
    if info.get("vocab_sha256") not in (None, sha):
        raise UserError(
            f"dataset {dataset} was built with another vocab (sha256 {info['vocab_sha256']}) than "
            f"vocab_file {vocab_file} (sha256 {sha})"
        )
    if info.get("max_seq_length") not in (None, max_seq_length):
        raise UserError(
            f"dataset {dataset} was built with max_seq_length {info['max_seq_length']}, "
            f"but max_seq_length is {max_seq_length}"
        )
    if info.get("do_lower_case") not in (None, bool(do_lower_case)):
        raise UserError(
            f"dataset {dataset} was built with do_lower_case={info['do_lower_case']}, "
            f"but do_lower_case is {bool(do_lower_case)}"
        )
    return info
