"""The layout of a data directory (the original's): the one module that names its parts.

    DATA_DIR/
      vocab.txt                      VOCAB_FILE (also the name of a run directory's copy)
      pretrain_tfrecords/            TFRECORD_DIR: pretrain_data.tfrecord-I-of-N shards
                                     (TFRECORD_PREFIX), dataset_info.json, token_counts.txt
      finetuning_data/TASK/          FINETUNING_DATA_DIR: a task's train/dev/test files
      models/MODEL_NAME/             MODELS_DIR: a run's directory (`electra_tf.run_dir`), its
                                     checkpoints ckpt-STEP (CHECKPOINT_NAME, `step_checkpoint`)

No dependencies (the scripts import it before TensorFlow); `tests/test_architecture.py` fails
when another module spells these names.

Example:
    >>> tfrecord_pattern("data")
    'data/pretrain_tfrecords/pretrain_data.tfrecord*'
"""

import os

VOCAB_FILE = "vocab.txt"
TFRECORD_DIR = "pretrain_tfrecords"
TFRECORD_PREFIX = "pretrain_data.tfrecord"
FINETUNING_DATA_DIR = "finetuning_data"
MODELS_DIR = "models"
# the files of a pretraining dataset directory (`electra_tf.pretraining_data.layout`)
DATASET_INFO_FILE = "dataset_info.json"
TOKEN_COUNTS_FILE = "token_counts.txt"
BUILD_MARKER = ".build_incomplete"  # a build started and has not finished
# a run's checkpoints: DIR/ckpt-STEP.index, .data-* (tf.train.CheckpointManager's prefix); a
# kept fine-tuned model's directory holds one, DIR/ckpt
CHECKPOINT_NAME = "ckpt"


def vocab_file(data_dir: str) -> str:
    return os.path.join(data_dir, VOCAB_FILE)


def tfrecord_dir(data_dir: str) -> str:
    return os.path.join(data_dir, TFRECORD_DIR)


def tfrecord_glob(directory: str) -> str:
    """The shards' glob in a dataset directory."""
    return os.path.join(directory, TFRECORD_PREFIX + "*")


def tfrecord_pattern(data_dir: str) -> str:
    """The shards' glob of a data directory (the `pretrain_tfrecords` hparam's default)."""
    return tfrecord_glob(tfrecord_dir(data_dir))


def finetuning_data_dir(data_dir: str, task_name: str) -> str:
    return os.path.join(data_dir, FINETUNING_DATA_DIR, task_name)


def step_checkpoint(directory: str, step: int) -> str:
    """The prefix of a run's checkpoint at `step`."""
    return os.path.join(directory, f"{CHECKPOINT_NAME}-{step}")


def model_dir(data_dir: str, model_name: str) -> str:
    """A run's directory, as the original: DATA_DIR/models/MODEL_NAME."""
    return os.path.join(data_dir, MODELS_DIR, model_name)
