"""A keras-hub preset directory (`save_to_preset`'s layout, keras-hub 0.32) and its configs.

    config.json                      {"module", "class_name": "ElectraBackbone", "config": {...},
                                      "registered_name": "keras_hub>ElectraBackbone"}
    metadata.json                    keras and keras-hub versions, parameter count, date
    model.weights.h5                 the backbone's weights (`electra_tf.keras_hub.names`)
    tokenizer.json                   the ElectraTokenizer's config (`lowercase`, `strip_accents`)
    assets/tokenizer/vocabulary.txt  its WordPiece vocab

A directory is a preset when its config.json has keras-hub's `registered_name` (or a
`class_name` with a `module`) and no `model_type` (which would make it Hugging Face's). The
backbone's keys map to `ModelConfig`: vocab_size, num_layers -> num_hidden_layers, num_heads ->
num_attention_heads, hidden_dim -> hidden_size, embedding_dim -> embedding_size,
intermediate_dim -> intermediate_size, dropout -> both dropout probabilities,
max_sequence_length -> max_position_embeddings, num_segments -> type_vocab_size; hidden_act is
"gelu_approximate" (ElectraBackbone's TransformerEncoders use
`keras.activations.gelu(x, approximate=True)`, keras-hub 0.32 electra_backbone.py) and
initializer_range 0.02 (its `electra_kernel_initializer`). The tokenizer's `lowercase` is
`do_lower_case`.
"""

import os
import sys
from typing import Any, Dict, Tuple

from electra_tf import run_dir
from electra_tf.errors import UserError
from electra_tf.foreign_dirs import CONFIG_FILE, is_keras_hub_config, is_preset  # noqa: F401
from electra_tf.io_utils import read_json
from electra_tf.model_config import ModelConfig

METADATA_FILE = "metadata.json"
WEIGHTS_FILE = "model.weights.h5"
TOKENIZER_FILE = "tokenizer.json"
VOCAB_FILE = os.path.join("assets", "tokenizer", "vocabulary.txt")
BACKBONE = "ElectraBackbone"
TOKENIZER = "ElectraTokenizer"
BACKBONE_MODULE = "keras_hub.src.models.electra.electra_backbone"
TOKENIZER_MODULE = "keras_hub.src.models.electra.electra_tokenizer"
LAYOUT_VERSION = "0.32.0"  # the keras-hub version whose save_to_preset layout this is
KIND = run_dir.KERAS_HUB  # the RunConfig kind of a preset (its config.json under `extra`)
HIDDEN_ACT = "gelu_approximate"
INITIALIZER_RANGE = 0.02
# backbone config key -> ModelConfig field
KEYS = {
    "vocab_size": "vocab_size",
    "num_layers": "num_hidden_layers",
    "num_heads": "num_attention_heads",
    "hidden_dim": "hidden_size",
    "embedding_dim": "embedding_size",
    "intermediate_dim": "intermediate_size",
    "max_sequence_length": "max_position_embeddings",
    "num_segments": "type_vocab_size",
}
_WARNED: set = set()


def warn_once(message: str) -> None:
    """A `warning:` line on stderr, once per process for each message."""
    if message not in _WARNED:
        _WARNED.add(message)
        print(f"warning: {message}", file=sys.stderr, flush=True)


def _class_of(d: Dict[str, Any]) -> str:
    return str(d.get("registered_name") or d.get("class_name"))


def model_config_from_backbone(d: Dict[str, Any], path: str) -> ModelConfig:
    """The `ModelConfig` of an ElectraBackbone's config.json (see the module docstring)."""
    if d.get("class_name") != BACKBONE:
        raise UserError(
            f"{path}: a keras-hub {_class_of(d)} preset, not an {BACKBONE} (only ELECTRA "
            "backbones load here)"
        )
    c = d.get("config")
    if not isinstance(c, dict):
        raise UserError(f"{path}: no backbone config object under 'config'")
    args: Dict[str, Any] = {}
    for key, field in KEYS.items():
        v = c.get(key)
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise UserError(f"{path}: config.{key} must be a positive integer, got {v!r}")
        args[field] = v
    rate = c.get("dropout", 0.1)
    if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not 0 <= rate < 1:
        raise UserError(f"{path}: config.dropout must be a number in [0, 1), got {rate!r}")
    if args["hidden_size"] % args["num_attention_heads"]:
        raise UserError(
            f"{path}: hidden_dim {args['hidden_size']} is not a multiple of num_heads "
            f"{args['num_attention_heads']}"
        )
    return ModelConfig(
        **args,
        hidden_act=HIDDEN_ACT,
        hidden_dropout_prob=float(rate),
        attention_probs_dropout_prob=float(rate),
        initializer_range=INITIALIZER_RANGE,
    )


def tokenizer_config(directory: str) -> Dict[str, Any]:
    """The preset's ElectraTokenizer config (tokenizer.json's `config`), checked, with its
    vocabulary file present; a preset without them is an error."""
    path = os.path.join(directory, TOKENIZER_FILE)
    vocab = os.path.join(directory, VOCAB_FILE)
    missing = [p for p in (path, vocab) if not os.path.exists(p)]
    if missing:
        raise UserError(
            f"{directory}: a keras-hub preset without its tokenizer ({', '.join(missing)} "
            "missing): save the ElectraTokenizer into it too (tokenizer.save_to_preset(DIR))"
        )
    d = read_json(path)
    if not isinstance(d, dict) or d.get("class_name") != TOKENIZER:
        what = _class_of(d) if isinstance(d, dict) else "not a keras object"
        raise UserError(f"{path}: tokenizer {what}, not a keras-hub {TOKENIZER}")
    c = d.get("config")
    if not isinstance(c, dict) or not isinstance(c.get("lowercase"), bool):
        raise UserError(f"{path}: no boolean config.lowercase")
    return c


def run_config(d: Dict[str, Any], path: str) -> run_dir.RunConfig:
    """What a preset's config.json (object `d`, read from `path`) describes: its encoder's
    config, `do_lower_case` from its tokenizer, and the config.json itself under "keras_hub"."""
    model_config, hparams = _run_config_parts(d, path)
    extra = {KIND: d}
    return run_dir.RunConfig(path, run_dir.KERAS_HUB, model_config, None, hparams, extra)


def read_run_config(directory: str) -> run_dir.RunConfig:
    """`run_config` of the preset in `directory`."""
    path = os.path.join(directory, CONFIG_FILE)
    return run_config(read_json(path), path)


def _run_config_parts(d: Dict[str, Any], path: str) -> Tuple[ModelConfig, Dict[str, Any]]:
    """(model config, hparams with `do_lower_case`) of a preset's config.json at `path`."""
    config = model_config_from_backbone(d, path)
    directory = os.path.dirname(path)
    tok = tokenizer_config(directory)
    lower = tok["lowercase"]
    if lower != bool(tok.get("strip_accents", False)):
        warn_once(
            f"{os.path.join(directory, TOKENIZER_FILE)}: lowercase {str(lower).lower()} with "
            f"strip_accents {str(not lower).lower()}: this project strips accents exactly when it "
            "lower-cases (BERT's rule), so accented text tokenizes differently than in keras-hub"
        )
    return config, {"do_lower_case": lower}


def vocab_path(directory: str) -> str:
    return os.path.join(directory, VOCAB_FILE)


def backbone_json(config: ModelConfig, dropout: float) -> Dict[str, Any]:
    """An ElectraBackbone's config.json for `config`, as keras-hub 0.32 writes it."""
    c = {
        "name": "electra_backbone",
        "trainable": True,
        "dtype": _policy("float32"),
        "vocab_size": config.vocab_size,
        "num_layers": config.num_hidden_layers,
        "num_heads": config.num_attention_heads,
        "hidden_dim": config.hidden_size,
        "embedding_dim": config.embedding_size,
        "intermediate_dim": config.intermediate_size,
        "dropout": dropout,
        "max_sequence_length": config.max_position_embeddings,
        "num_segments": config.type_vocab_size,
    }
    return _object(BACKBONE_MODULE, BACKBONE, c)


def tokenizer_json(do_lower_case: bool) -> Dict[str, Any]:
    """An ElectraTokenizer's tokenizer.json; accents are stripped exactly when lower-casing."""
    c = {
        "name": "electra_tokenizer",
        "trainable": True,
        "dtype": _policy("int32"),
        "config_file": TOKENIZER_FILE,
        "vocabulary": None,
        "sequence_length": None,
        "lowercase": do_lower_case,
        "strip_accents": do_lower_case,
        "split": True,
        "suffix_indicator": "##",
        "oov_token": "[UNK]",
        "special_tokens": None,
        "special_tokens_in_strings": False,
    }
    return _object(TOKENIZER_MODULE, TOKENIZER, c)


def _policy(name: str) -> Dict[str, Any]:
    return {
        "module": "keras",
        "class_name": "DTypePolicy",
        "config": {"name": name},
        "registered_name": None,
    }


def _object(module: str, class_name: str, config: Dict[str, Any]) -> Dict[str, Any]:
    return {
        "module": module,
        "class_name": class_name,
        "config": config,
        "registered_name": f"keras_hub>{class_name}",
    }
