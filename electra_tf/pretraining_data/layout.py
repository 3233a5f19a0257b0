"""What a pretraining dataset directory holds: the one place that names its files."""

import os

TFRECORD_PREFIX = "pretrain_data.tfrecord"
DATASET_INFO_FILE = "dataset_info.json"
TOKEN_COUNTS_FILE = "token_counts.txt"
# a data_dir's TFRecord directory (`find_dataset_info` also looks there)
TFRECORD_DIR = "pretrain_tfrecords"


def output_file_names(output_dir: str, num_out_files: int) -> list[str]:
    """`pretrain_data.tfrecord-I-of-N` for I in 0..N-1, in `output_dir`."""
    return [
        os.path.join(output_dir, f"{TFRECORD_PREFIX}-{i}-of-{num_out_files}")
        for i in range(num_out_files)
    ]
