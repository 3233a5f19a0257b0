"""What a pretraining dataset directory holds: the one place that names its files.

A build writes each shard under a temporary name (`temporary_name`, hidden from the shards' glob)
and renames it when the whole build has succeeded; `dataset_info.json` comes last. Until then the
directory holds `BUILD_MARKER` (a build started here and has not finished: a re-run replaces what
it left) and the build holds `LOCK_FILE` (`electra_tf.run_lock`).
"""

import os

# the names are `electra_tf.data_layout`'s (TFRECORD_DIR: a data_dir's TFRecord directory,
# where `find_dataset_info` also looks)
from electra_tf.data_layout import (  # noqa: F401 (re-exported)
    BUILD_MARKER,
    DATASET_INFO_FILE,
    TFRECORD_DIR,
    TFRECORD_PREFIX,
    TOKEN_COUNTS_FILE,
)

LOCK_FILE = ".build.lock"
_TEMPORARY_SUFFIX = ".incomplete"


def output_file_names(output_dir: str, num_out_files: int) -> list[str]:
    """`pretrain_data.tfrecord-I-of-N` for I in 0..N-1, in `output_dir`."""
    return [
        os.path.join(output_dir, f"{TFRECORD_PREFIX}-{i}-of-{num_out_files}")
        for i in range(num_out_files)
    ]


def temporary_name(path: str) -> str:
    """Where a shard is written until the build is complete: `.NAME.incomplete` beside it."""
    directory, name = os.path.split(path)
    return os.path.join(directory, f".{name}{_TEMPORARY_SUFFIX}")


def is_temporary(name: str) -> bool:
    return name.startswith("." + TFRECORD_PREFIX) and name.endswith(_TEMPORARY_SUFFIX)
