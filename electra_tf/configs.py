"""Temporary re-exports for modules not yet moved to `model_config`, `hparams` and `io_utils`
(removed when the fine-tuning redesign lands)."""

from electra_tf.hparams import parse_hparams, reject_unknown  # noqa: F401
from electra_tf.io_utils import read_json, write_json  # noqa: F401
from electra_tf.model_config import (  # noqa: F401
    MODEL_SIZES,
    ModelConfig,
    get_generator_config,
    get_model_config,
)


def reject_unknown_hparams(hparams, defaults):
    reject_unknown(hparams, defaults)
