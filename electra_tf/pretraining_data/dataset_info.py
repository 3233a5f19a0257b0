"""`dataset_info.json` and `token_counts.txt`: what a build records, and the trainer's checks.

`dataset_info.json` holds the counts, the vocab's sha256 and the tokenizer settings of a build,
and each shard's name, record count and size (`shards`); `token_counts.txt` how often each vocab
id occurs in the written `input_ids`, padding excluded (one integer per line, line i = id i).
Both go through tf.io.gfile (datasets may be remote), written atomically, dataset_info.json last
of a build; the info keeps the builder's key order. The trainer requires it (`required`): a
directory without one is a build that did not finish, and shards that are not the ones it lists
(missing, other sizes, unlisted) are refused, both saying to rebuild.
"""

import hashlib
import json
import os
from collections.abc import Callable, Sequence

import numpy as np
import tensorflow as tf

from electra_tf.errors import UserError
from electra_tf.io_utils import write_atomically
from electra_tf.pretraining_data.layout import (
    DATASET_INFO_FILE,
    TFRECORD_DIR,
    TFRECORD_PREFIX,
    TOKEN_COUNTS_FILE,
)
from electra_tf.pretraining_data.tfrecord_check import scan_shard
from electra_tf.tokenization.reference import is_chinese_char
from electra_tf.vocab import read_vocab, vocab_tokens

REBUILD = "rebuild it with build_pretraining_dataset.py"


def file_sha256(path: str) -> str:
    digest = hashlib.sha256()
    with tf.io.gfile.GFile(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def write_text(path: str, text: str) -> None:
    """Writes `path` atomically (a temporary file renamed over it); a full disk is a UserError."""
    if "://" not in path:
        write_atomically(path, lambda f: f.write(text))
        return
    tmp = path + ".tmp"
    with tf.io.gfile.GFile(tmp, "w") as f:
        f.write(text)
    tf.io.gfile.rename(tmp, path, overwrite=True)


def write_token_counts(output_dir: str, counts: np.ndarray) -> None:
    write_text(os.path.join(output_dir, TOKEN_COUNTS_FILE), "".join(f"{c}\n" for c in counts))


def read_token_counts(path: str) -> np.ndarray:
    """token_counts.txt (or the directory holding it) -> int64 [vocab_size]."""
    if tf.io.gfile.isdir(path):
        path = os.path.join(path, TOKEN_COUNTS_FILE)
    if not tf.io.gfile.exists(path):
        raise UserError(f"token counts file not found: {path}")
    with tf.io.gfile.GFile(path, "r") as f:
        return np.array([int(line) for line in f if line.strip()], np.int64)


def write_dataset_info(output_dir: str, info: dict) -> None:
    write_text(os.path.join(output_dir, DATASET_INFO_FILE), json.dumps(info, indent=2) + "\n")


def remove_dataset_info(output_dir: str) -> None:
    """A build's first step of replacing a dataset: until the new info is written, the directory
    is refused by the trainer."""
    path = os.path.join(output_dir, DATASET_INFO_FILE)
    if tf.io.gfile.exists(path):
        tf.io.gfile.remove(path)


def find_dataset_info(data_dir_or_tfrecord_dir: str, below: bool = True) -> str | None:
    """The dataset_info.json in the directory or (`below`) in its pretrain_tfrecords/
    subdirectory, if any."""
    paths = [os.path.join(data_dir_or_tfrecord_dir, DATASET_INFO_FILE)]
    if below:
        paths.append(os.path.join(data_dir_or_tfrecord_dir, TFRECORD_DIR, DATASET_INFO_FILE))
    for path in paths:
        if tf.io.gfile.exists(path):
            return path
    return None


def check_dataset_info(
    data_dir_or_tfrecord_dir: str,
    vocab_file: str,
    max_seq_length: int,
    do_lower_case: bool,
    required: bool = False,
    files: Sequence[str] | None = None,
    skip_corrupt_records: bool = False,
    log: Callable[[str], None] = print,
    whole_word_masking: bool = False,
) -> dict | None:
    """Compares dataset_info.json with the trainer's settings; returns it (None for datasets
    without one, unless `required`).

    Raises `UserError` when the dataset was built with another vocab (sha256), another
    max_seq_length or another lower-casing; with `required`, when there is no dataset_info.json
    (a build that did not finish, or TFRecords made elsewhere), and when the shards on disk or
    `files` are not those it lists (`check_shards`); with `whole_word_masking`, when the dataset
    has no word boundaries but most of its tokens are CJK characters (`check_word_boundaries`).
    """
    path = find_dataset_info(data_dir_or_tfrecord_dir)
    if path is None:
        if required:
            raise UserError(
                f"{data_dir_or_tfrecord_dir}: no {DATASET_INFO_FILE}: its build did not finish "
                f"(or another tool made it); {REBUILD} (TFRecords made elsewhere: "
                "build_pretraining_dataset.py --index_only=true writes one for them)"
            )
        return None
    try:
        with tf.io.gfile.GFile(path, "r") as f:
            info = json.load(f)
    except ValueError as e:
        raise UserError(f"{path} is not valid JSON ({e}); {REBUILD}") from None
    if not isinstance(info, dict):
        raise UserError(f"{path}: not a JSON object; {REBUILD}")
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
    if whole_word_masking:
        check_word_boundaries(dataset, info, vocab_file)
    if required:
        try:
            check_shards(dataset, path, info, files, skip_corrupt_records, log, max_seq_length)
        except (KeyError, TypeError, AttributeError) as e:  # a damaged "shards" list
            raise UserError(f"{path}: its shards list is malformed ({e!r}); {REBUILD}") from None
    return info


CJK_SHARE_LIMIT = 0.5


def check_word_boundaries(dataset: str, info: dict, vocab_file: str) -> None:
    """Whole-word masking finds words by WordPiece's `##` pieces, which CJK characters never are:
    on a dataset built without a segmenter's boundaries (`word_segmenter`) whose tokens are
    mostly (> CJK_SHARE_LIMIT, from token_counts.txt) CJK characters it would mask single
    characters; that is one line saying to rebuild with --word_segmenter. (A dataset without
    token counts, indexed from elsewhere, is not checked.)"""
    counts_file = os.path.join(dataset, info.get("token_counts_file") or TOKEN_COUNTS_FILE)
    if info.get("word_segmenter") or not tf.io.gfile.exists(counts_file):
        return
    counts = read_token_counts(counts_file)
    tokens = vocab_tokens(read_vocab(vocab_file))[: len(counts)]
    cjk = np.array([len(t) == 1 and is_chinese_char(ord(t)) for t in tokens], bool)
    share = counts[: len(cjk)][cjk].sum() / max(int(counts.sum()), 1)
    if share > CJK_SHARE_LIMIT:
        raise UserError(
            f"dataset {dataset} has no word boundaries and {share:.0%} of its tokens are CJK "
            "characters: whole_word_masking would mask single characters; rebuild it with "
            "build_pretraining_dataset.py --word_segmenter=jieba, or set whole_word_masking=false"
        )


def check_shards(dataset, info_path, info, files, skip_corrupt_records, log, max_seq_length):
    """The shards on disk against the info's list: every listed shard present with its recorded
    size, every shard (and each of `files` in the directory) listed. A size that differs is a
    truncated or rewritten shard: an error, or with `skip_corrupt_records` a warning (its
    unreadable records are counted when the data is scanned)."""
    on_disk = {
        os.path.basename(p) for p in tf.io.gfile.glob(os.path.join(dataset, TFRECORD_PREFIX + "*"))
    }
    used = {os.path.basename(f) for f in files or () if os.path.dirname(f) == dataset}
    listed = info.get("shards")
    if listed is None:  # a dataset_info.json from before shards were listed: count them
        expected = info.get("num_out_files")
        if expected is not None and len(on_disk) != expected:
            raise UserError(
                f"{dataset}: {len(on_disk)} {TFRECORD_PREFIX}* files, but {info_path} records "
                f"{expected}: the dataset is incomplete; {REBUILD}"
            )
        return
    sizes = {s["file"]: s["bytes"] for s in listed}
    records = {s["file"]: s.get("records") for s in listed}
    missing = sorted(set(sizes) - on_disk)
    if missing:
        shard = os.path.join(dataset, missing[0])
        raise UserError(f"{shard}: listed in {info_path} but missing; {REBUILD}")
    unlisted = sorted((on_disk | used) - set(sizes))
    if unlisted:
        raise UserError(
            f"{os.path.join(dataset, unlisted[0])}: not listed in {info_path} (another build's "
            f"file?); {REBUILD} (--overwrite=true), or remove it"
        )
    for name in sorted(sizes):
        shard = os.path.join(dataset, name)
        size = tf.io.gfile.stat(shard).length
        if size != sizes[name]:
            damage = scan_shard(shard, max_seq_length, records[name])
            where = f" (record {damage.readable}: {damage.message})" if damage else ""
            message = (
                f"{shard}: {size} bytes, but {info_path} records {sizes[name]}: the shard is "
                f"truncated or was rewritten{where}"
            )
            if not skip_corrupt_records:
                raise UserError(
                    f"{message}; {REBUILD}, or set skip_corrupt_records=true to read what is "
                    "readable"
                )
            log(f"warning: {message} (skip_corrupt_records: reading what is readable)")
