"""Pretraining data: corpus text -> ExampleBuilder -> TFRecord shards -> tf.data input.

The builder reproduces `build_pretraining_dataset.py` of google-research/electra exactly
(`example_builder`), with two differences that do not change the algorithm:
  * every random draw comes from an injected `random.Random`, so a build is reproducible given a
    seed;
  * lines are tokenized in batches (`tokenizer.tokenize_to_ids`), which gives the same ids as one
    by one (`corpus`).

Each TFRecord holds `tf.train.Example`s with exactly three int64 features of length max_seq_length
(`encoding`): `input_ids` (`[CLS] A [SEP] (B [SEP])` then 0-padding), `input_mask` (1 for real
tokens) and `segment_ids` (0 for [CLS] + A + first [SEP], 1 for B + final [SEP], 0 for padding);
a build with a word segmenter adds `word_starts` (1 where a segmented word starts: `segmentation`).
A build (`builder`, one `job` per process) also writes `dataset_info.json` (counts, the vocab's
sha256, the tokenizer settings) and `token_counts.txt` (`dataset_info`); `layout` names the files.
The trainer checks a dataset (`tfrecord_check`, `dataset_info`) and reads it (`input_pipeline`).
"""

from electra_tf.pretraining_data.builder import build_dataset, index_dataset
from electra_tf.pretraining_data.corpus import (
    TOKENIZE_CHUNK_LINES,
    iter_file_examples,
    list_corpus_files,
)
from electra_tf.pretraining_data.dataset_info import (
    check_dataset_info,
    file_sha256,
    find_dataset_info,
    read_token_counts,
)
from electra_tf.pretraining_data.encoding import FEATURE_NAMES, ExampleSerializer, make_tf_example
from electra_tf.pretraining_data.example_builder import ExampleBuilder, PretrainingExample
from electra_tf.pretraining_data.input_pipeline import (
    expand_file_patterns,
    iter_examples,
    pretraining_dataset,
)
from electra_tf.pretraining_data.job import PROGRESS_EVERY_S, default_tokenizer_class
from electra_tf.pretraining_data.layout import (
    DATASET_INFO_FILE,
    TFRECORD_PREFIX,
    TOKEN_COUNTS_FILE,
    output_file_names,
)
from electra_tf.pretraining_data.tfrecord_check import check_tfrecords

__all__ = [
    "DATASET_INFO_FILE",
    "FEATURE_NAMES",
    "PROGRESS_EVERY_S",
    "TFRECORD_PREFIX",
    "TOKENIZE_CHUNK_LINES",
    "TOKEN_COUNTS_FILE",
    "ExampleBuilder",
    "ExampleSerializer",
    "PretrainingExample",
    "build_dataset",
    "check_dataset_info",
    "check_tfrecords",
    "default_tokenizer_class",
    "expand_file_patterns",
    "file_sha256",
    "find_dataset_info",
    "index_dataset",
    "iter_examples",
    "iter_file_examples",
    "list_corpus_files",
    "make_tf_example",
    "output_file_names",
    "pretraining_dataset",
    "read_token_counts",
]
