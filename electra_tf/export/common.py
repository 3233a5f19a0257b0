"""What every export checks and writes: an empty export directory, a vocab that fits the model
(with the special tokens the text signatures pack), and the SavedModel's `assets.extra/` files."""

import importlib
import os
from typing import Any

from electra_tf import vocab
from electra_tf.errors import UserError
from electra_tf.io_utils import write_json
from electra_tf.model_config import ModelConfig

EXTRA_DIR = "assets.extra"  # beside the SavedModel's assets; TensorFlow leaves it alone
SERVING_SPECIAL = ("cls", "sep", "pad")  # what `electra_tf.packing` lays out
SERVING_EXTRA = "serving"  # pyproject's optional dependencies of the ONNX and LiteRT exports


def require_optional(module: str, purpose: str):
    """Imports an optional dependency; a missing one is one error line naming the extra."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise UserError(
            f"{purpose} needs the {module} package: pip install 'electra_tf[{SERVING_EXTRA}]'"
        ) from None


def check_export_dir(export_dir: str) -> None:
    if os.path.isdir(export_dir) and os.listdir(export_dir):
        raise UserError(f"{export_dir}: the export directory is not empty; choose a new one")
    if os.path.exists(export_dir) and not os.path.isdir(export_dir):
        raise UserError(f"{export_dir}: exists and is not a directory")


def check_vocab(vocab_file: str, config: ModelConfig) -> dict[str, int]:
    """The vocab's "cls", "sep" and "pad" ids; a missing file, a vocab larger than the model's
    or a missing special token is an error."""
    tokens = vocab.read_vocab(vocab_file)
    if len(tokens) > config.vocab_size:
        raise UserError(
            f"{vocab_file}: {len(tokens)} entries, more than the model's vocab_size "
            f"{config.vocab_size}"
        )
    return vocab.special_token_ids(tokens, vocab_file, SERVING_SPECIAL)


def write_extra(export_dir: str, export_config: dict[str, Any], model_config: ModelConfig) -> None:
    """`assets.extra/export_config.json` (what was exported, how) and `model_config.json`."""
    write_json(os.path.join(export_dir, EXTRA_DIR, "export_config.json"), export_config)
    write_json(os.path.join(export_dir, EXTRA_DIR, "model_config.json"), model_config.to_dict())
