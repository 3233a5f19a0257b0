"""Checkpoints in the original's TF1 layout, which tools made for the released models read."""

import os
import shutil
from typing import Optional

from electra_tf import run_dir
from electra_tf.checkpoint import load_model, restore
from electra_tf.export.common import check_export_dir, check_vocab


def export_original_checkpoint(
    loaded: load_model.Loaded,
    export_dir: str,
    vocab_file: Optional[str] = None,
    name: str = "model.ckpt",
) -> list[str]:
    """Writes every loaded network under the original's variable names (a TF1 name-based
    checkpoint `export_dir/name` with its `checkpoint` file), `bert_config.json` (the
    discriminator's), `generator_config.json` (when there is a separate generator) and
    `vocab.txt`. Returns the names written."""
    check_export_dir(export_dir)
    if vocab_file is not None:
        check_vocab(vocab_file, loaded.config.model_config)
    nets = loaded.networks
    names = restore.write_original_checkpoint(
        nets.weights_of(loaded.parts), os.path.join(export_dir, name), loaded.step or 0
    )
    loaded.config.model_config.to_json_file(os.path.join(export_dir, run_dir.BERT_CONFIG_FILE))
    if loaded.generator_config is not None:
        loaded.generator_config.to_json_file(os.path.join(export_dir, "generator_config.json"))
    if vocab_file is not None:
        shutil.copyfile(vocab_file, os.path.join(export_dir, run_dir.VOCAB_FILE))
    return names
