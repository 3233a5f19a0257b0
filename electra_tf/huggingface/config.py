"""Hugging Face's `ElectraConfig` (a `config.json` with `"model_type": "electra"`) <-> this
project's `ModelConfig`.

Reading takes every model key with `ElectraConfig`'s default where it is absent (what
`transformers` would build) and refuses what this project cannot compute exactly, naming the key:
`layer_norm_eps` other than 1e-12 (this project's LayerNorm is fixed at 1e-12),
`position_embedding_type` other than "absolute", a decoder (`is_decoder`, `add_cross_attention`),
and a `hidden_act` with no exact counterpart. Activations, checked numerically (max |delta| over
[-12, 12] in float32): "gelu" and "gelu_python" are the exact erf GELU ("gelu" here, 1.2e-6);
"gelu_new", "gelu_pytorch_tanh", "gelu_fast" and "gelu_accurate" are the tanh approximation
("gelu_approximate" here, 9.5e-7; 4.7e-4 from the exact one, so not interchangeable); "relu".
"""

import os
from typing import Any, Dict, Optional

from electra_tf import run_dir
from electra_tf.errors import UserError
from electra_tf.foreign_dirs import CONFIG_FILE, HF_TOKENIZER_CONFIG_FILE, HF_TOKENIZER_FILE
from electra_tf.huggingface.tokenizer import do_lower_case
from electra_tf.io_utils import read_json
from electra_tf.model_config import SHAPE_KEYS, ModelConfig

MODEL_TYPE = "electra"
LAYER_NORM_EPS = 1e-12  # modeling.layers.LayerNorm's
# ElectraConfig's defaults (transformers 5.24, configuration_electra.py) for the keys read here
HF_DEFAULTS: Dict[str, Any] = {
    "vocab_size": 30522,
    "embedding_size": 128,
    "hidden_size": 256,
    "num_hidden_layers": 12,
    "num_attention_heads": 4,
    "intermediate_size": 1024,
    "hidden_act": "gelu",
    "hidden_dropout_prob": 0.1,
    "attention_probs_dropout_prob": 0.1,
    "max_position_embeddings": 512,
    "type_vocab_size": 2,
    "initializer_range": 0.02,
    "layer_norm_eps": LAYER_NORM_EPS,
    "tie_word_embeddings": True,
}
ACTIVATIONS_FROM_HF = {
    "gelu": "gelu",
    "gelu_python": "gelu",
    "gelu_new": "gelu_approximate",
    "gelu_pytorch_tanh": "gelu_approximate",
    "gelu_fast": "gelu_approximate",
    "gelu_accurate": "gelu_approximate",
    "relu": "relu",
}
ACTIVATIONS_TO_HF = {"gelu": "gelu", "gelu_approximate": "gelu_new", "relu": "relu"}
_INTS = SHAPE_KEYS + ("max_position_embeddings", "type_vocab_size")
_FLOATS = ("hidden_dropout_prob", "attention_probs_dropout_prob", "initializer_range")


def value(d: Dict[str, Any], key: str) -> Any:
    return d.get(key, HF_DEFAULTS.get(key))


def model_config_from_hf(d: Dict[str, Any], path: str) -> ModelConfig:
    """The `ModelConfig` of a Hugging Face ELECTRA config.json (see the module docstring)."""
    if d.get("model_type") != MODEL_TYPE:
        raise UserError(f"{path}: model_type {d.get('model_type')!r} is not {MODEL_TYPE!r}")
    args: Dict[str, Any] = {}
    for key in _INTS:
        v = value(d, key)
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise UserError(f"{path}: {key} must be a positive integer, got {v!r}")
        args[key] = v
    for key in _FLOATS:
        v = value(d, key)
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise UserError(f"{path}: {key} must be a number, got {v!r}")
        args[key] = float(v)
    eps = value(d, "layer_norm_eps")
    if isinstance(eps, bool) or not isinstance(eps, (int, float)) or eps != LAYER_NORM_EPS:
        raise UserError(
            f"{path}: layer_norm_eps {eps!r} cannot be represented (this project's LayerNorm "
            f"uses {LAYER_NORM_EPS})"
        )
    act = value(d, "hidden_act")
    if act not in ACTIVATIONS_FROM_HF:
        raise UserError(
            f"{path}: hidden_act {act!r} has no exact counterpart here (supported: "
            f"{', '.join(ACTIVATIONS_FROM_HF)})"
        )
    args["hidden_act"] = ACTIVATIONS_FROM_HF[act]
    position = d.get("position_embedding_type", "absolute")
    if position != "absolute":
        raise UserError(
            f'{path}: position_embedding_type {position!r} cannot be represented (only "absolute")'
        )
    for key in ("is_decoder", "add_cross_attention"):
        if d.get(key):
            raise UserError(f"{path}: {key} true cannot be represented (an encoder only)")
    if args["hidden_size"] % args["num_attention_heads"]:
        raise UserError(
            f"{path}: hidden_size {args['hidden_size']} is not a multiple of "
            f"num_attention_heads {args['num_attention_heads']}"
        )
    return ModelConfig(**args)


def run_config(d: Dict[str, Any], path: str) -> run_dir.RunConfig:
    """What a Hugging Face config.json (object `d`, read from `path`) describes: its model
    config, `do_lower_case` where its tokenizer files say, and the config.json itself under
    "huggingface"."""
    model_config = model_config_from_hf(d, path)
    directory = os.path.dirname(path)
    lower = do_lower_case(
        os.path.join(directory, HF_TOKENIZER_CONFIG_FILE),
        os.path.join(directory, HF_TOKENIZER_FILE),
    )
    hparams = {} if lower is None else {"do_lower_case": lower}
    extra = {"huggingface": d}
    return run_dir.RunConfig(path, run_dir.HUGGINGFACE, model_config, None, hparams, extra)


def read_run_config(directory: str) -> run_dir.RunConfig:
    """`run_config` of the Hugging Face directory `directory`."""
    path = os.path.join(directory, CONFIG_FILE)
    return run_config(read_json(path), path)


def tie_word_embeddings(d: Dict[str, Any], path: str) -> bool:
    tie = value(d, "tie_word_embeddings")
    if not isinstance(tie, bool):
        raise UserError(f"{path}: tie_word_embeddings must be true or false, got {tie!r}")
    return tie


def hf_config(
    config: ModelConfig,
    architecture: str,
    embedding_size: int,
    tied_output: bool = True,
    pad_token_id: Optional[int] = 0,
) -> Dict[str, Any]:
    """The config.json of `config` as Hugging Face's `architecture` ("ElectraForPreTraining",
    ...); `embedding_size` is the width of the embeddings the encoder uses (a generator tied to
    the discriminator's embeddings has the discriminator's)."""
    act = ACTIVATIONS_TO_HF.get(config.hidden_act)
    if act is None:
        raise UserError(f"hidden_act {config.hidden_act!r} has no Hugging Face counterpart")
    return {
        "architectures": [architecture],
        "model_type": MODEL_TYPE,
        "vocab_size": config.vocab_size,
        "embedding_size": embedding_size,
        "hidden_size": config.hidden_size,
        "num_hidden_layers": config.num_hidden_layers,
        "num_attention_heads": config.num_attention_heads,
        "intermediate_size": config.intermediate_size,
        "hidden_act": act,
        "hidden_dropout_prob": config.hidden_dropout_prob,
        "attention_probs_dropout_prob": config.attention_probs_dropout_prob,
        "max_position_embeddings": config.max_position_embeddings,
        "type_vocab_size": config.type_vocab_size,
        "initializer_range": config.initializer_range,
        "layer_norm_eps": LAYER_NORM_EPS,
        "pad_token_id": pad_token_id,
        "tie_word_embeddings": tied_output,
        "dtype": "float32",
    }
