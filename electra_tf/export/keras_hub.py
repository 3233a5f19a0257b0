"""The keras-hub layout (`save_to_preset`'s, keras-hub 0.32): the encoder as an ElectraBackbone
preset that `keras_hub.models.ElectraBackbone.from_preset(DIR)` and
`keras_hub.models.ElectraTokenizer.from_preset(DIR)` load, written with h5py and json alone (no
keras-hub needed), through the name table of `electra_tf.keras_hub.names`.

Writes config.json, metadata.json, model.weights.h5 (every group and `vars` name attribute that
Keras 3 writes for the backbone, float32), tokenizer.json (`lowercase` and `strip_accents` both
`do_lower_case`, BERT's rule) and assets/tokenizer/vocabulary.txt.

Two things have no exact counterpart. keras-hub's `pooled_dense` (a tanh dense on [CLS]) does not
exist in ELECTRA: it is written freshly initialised as keras-hub initialises it (truncated normal,
stddev 0.02, seed 0; zero bias), with a warning: its `pooled_output` is untrained. keras-hub's
transformer layers apply the tanh approximation of GELU: a model trained with the exact GELU
("gelu", this project's default) exports only with `allow_activation_change`, and then with a
warning giving the largest difference it makes to the sequence output on a probe batch.
"""

import dataclasses
import datetime
import json
import os
import shutil
from typing import Dict, List, Optional

import numpy as np
import tensorflow as tf

from electra_tf import vocab
from electra_tf.checkpoint import load_model
from electra_tf.errors import UserError
from electra_tf.export.common import check_export_dir
from electra_tf.io_utils import write_atomically
from electra_tf.keras_hub import config as kh
from electra_tf.keras_hub import names
from electra_tf.model_config import ModelConfig
from electra_tf.modeling.encoder import TransformerEncoder

KERAS_HUB_SPECIAL = ("unk", "sep", "pad", "cls", "mask")  # ElectraTokenizer's special tokens
PROBE_SEED = 0
# a transformer layer's groups inside its own (Keras' attribute paths) and their layer names;
# "{i}" is the `_N` suffix Keras gives the N-th layer's unnamed dropout and softmax layers
_LAYER_GROUPS = {
    "": "transformer_layer_{n}",
    "_feedforward_dropout": "feedforward_dropout",
    "_feedforward_intermediate_dense": "feedforward_intermediate_dense",
    "_feedforward_layer_norm": "feedforward_layer_norm",
    "_feedforward_output_dense": "feedforward_output_dense",
    "_self_attention_dropout": "self_attention_dropout",
    "_self_attention_layer": "self_attention_layer",
    "_self_attention_layer/_dropout_layer": "dropout{i}",
    "_self_attention_layer/_softmax": "softmax{i}",
    "_self_attention_layer/key_dense": "key",
    "_self_attention_layer/output_dense": "attention_output",
    "_self_attention_layer/query_dense": "query",
    "_self_attention_layer/value_dense": "value",
    "_self_attention_layer_norm": "self_attention_layer_norm",
}


def _top_level(num_layers: int, projection: bool) -> Dict[str, str]:
    """The backbone's layers (name -> group under `layers/`) in `model.layers` order, named as
    Keras names them (class name in snake case, `_N` for the N-th of a class)."""
    layers = {
        "token_ids": "input_layer",
        "segment_ids": "input_layer_1",
        "padding_mask": "input_layer_2",
        "token_embedding": "reversible_embedding",
        "position_embedding": "position_embedding",
        "segment_embedding": "embedding",
        "embeddings_add": "add",
        "embeddings_layer_norm": "layer_normalization",
        "embeddings_dropout": "dropout",
    }
    if projection:
        layers["embeddings_projection"] = "dense"
    for n in range(num_layers):
        layers[f"transformer_layer_{n}"] = "transformer_encoder" + (f"_{n}" if n else "")
    layers["pooled_dense"] = "dense_1" if projection else "dense"
    return layers


def write_weights(path: str, weights: Dict[str, np.ndarray], config: ModelConfig) -> None:
    """model.weights.h5 of a backbone `config` holding `weights` (keras-hub names and shapes)."""
    import h5py

    projection = config.embedding_size != config.hidden_size
    top = _top_level(config.num_hidden_layers, projection)
    with h5py.File(path, "w") as f:
        f.create_group("vars").attrs["name"] = "electra_backbone"
        for layer, key in top.items():
            if layer.startswith("transformer_layer_"):
                n = int(layer.rsplit("_", 1)[1])
                for inner, name in _LAYER_GROUPS.items():
                    group = f.create_group(f"layers/{key}/{inner}/vars".replace("//", "/"))
                    group.attrs["name"] = name.format(n=n, i=f"_{n}" if n else "")
            else:
                f.create_group(f"layers/{key}/vars").attrs["name"] = layer
        for name, value in weights.items():
            layer, inner, index = names.location(name)
            group = f"layers/{top[layer]}/{inner}/vars".replace("//", "/")
            f[group].create_dataset(str(index), data=np.asarray(value, np.float32))


def _write_json(path: str, obj) -> None:
    """JSON as keras-hub writes it (insertion order, indent 4), atomically."""
    write_atomically(path, lambda f: f.write(json.dumps(obj, indent=4)))


def _pooler(config: ModelConfig) -> Dict[str, np.ndarray]:
    rng = np.random.default_rng(PROBE_SEED)
    h = config.hidden_size
    kernel = rng.normal(0.0, kh.INITIALIZER_RANGE, (h, h))
    while (out := np.abs(kernel) > 2 * kh.INITIALIZER_RANGE).any():  # truncated at 2 stddev
        kernel[out] = rng.normal(0.0, kh.INITIALIZER_RANGE, int(out.sum()))
    return {names.POOLER[0]: kernel.astype(np.float32), names.POOLER[1]: np.zeros(h, np.float32)}


def activation_difference(encoder, config: ModelConfig) -> float:
    """The largest |difference| that keras-hub's tanh-approximated GELU makes to `encoder`'s
    sequence output (real tokens) on a seeded probe batch of 4 x min(64, positions) ids."""
    approx = TransformerEncoder(dataclasses.replace(config, hidden_act=kh.HIDDEN_ACT))
    rng = np.random.default_rng(PROBE_SEED)
    length = min(64, config.max_position_embeddings)
    ids = rng.integers(0, config.vocab_size, (4, length)).astype(np.int32)
    mask = np.arange(length)[None] < np.array([[length], [length // 2], [3], [length - 1]])
    mask = mask.astype(np.int32)
    seg = (np.arange(length)[None] >= length // 3).astype(np.int32) * mask
    ids, mask, seg = tf.constant(ids * mask), tf.constant(mask), tf.constant(seg)
    approx(ids, mask, seg)
    ours = {w.path.split("/", 1)[1]: w for w in encoder.weights}
    for w in approx.weights:
        w.assign(ours[w.path.split("/", 1)[1]])
    delta = np.abs(encoder(ids, mask, seg).numpy() - approx(ids, mask, seg).numpy())
    return float(delta[mask.numpy().astype(bool)].max())


def export_keras_hub(
    loaded: load_model.Loaded,
    head: str,
    export_dir: str,
    vocab_file: Optional[str],
    do_lower_case: Optional[bool] = None,
    allow_activation_change: bool = False,
    log=print,
) -> List[str]:
    """Writes the keras-hub preset of the encoder (see the module docstring); returns the
    keras-hub weight names written."""
    check_export_dir(export_dir)
    if head != "encoder":
        raise UserError(
            f"--format=keras_hub writes an {kh.BACKBONE}, the encoder alone: use --head=encoder"
        )
    if vocab_file is None:
        raise UserError(
            f"{loaded.prefix}: no vocab; a keras-hub preset needs its tokenizer: pass --vocab_file"
        )
    encoder = loaded.networks.discriminator
    emb = encoder.embeddings.config
    config = dataclasses.replace(
        encoder.config,
        vocab_size=emb.vocab_size,
        embedding_size=emb.embedding_size,
        max_position_embeddings=emb.max_position_embeddings,
        type_vocab_size=emb.type_vocab_size,
    )
    tokens = vocab.read_vocab(vocab_file)
    if len(tokens) > config.vocab_size:
        raise UserError(
            f"{vocab_file}: {len(tokens)} entries, more than the model's vocab_size "
            f"{config.vocab_size}"
        )
    vocab.special_token_ids(tokens, vocab_file, KERAS_HUB_SPECIAL)
    act = config.hidden_act
    if act not in ("gelu", kh.HIDDEN_ACT):
        raise UserError(
            f"hidden_act {act!r}: keras-hub's {kh.BACKBONE} always applies the tanh GELU"
        )
    if act == "gelu":
        if not allow_activation_change:
            raise UserError(
                "hidden_act 'gelu' (exact): keras-hub's ElectraBackbone applies the tanh "
                "approximation of GELU, so keras-hub would compute different outputs; pass "
                "--allow_activation_change to export anyway (the difference is measured and shown)"
            )
        delta = activation_difference(encoder, config)
        kh.warn_once(
            "the model was trained with the exact GELU; keras-hub applies the tanh approximation: "
            f"on a probe batch its sequence output differs by up to {delta:.3g} (max |delta|)"
        )
    rate = config.hidden_dropout_prob
    if config.attention_probs_dropout_prob != rate:
        log(
            f"keras-hub has one dropout rate: writing hidden_dropout_prob {rate} (the model's "
            f"attention_probs_dropout_prob {config.attention_probs_dropout_prob} is not kept)"
        )
    variables = {w.path.split("/", 1)[1]: w for w in encoder.weights}
    shapes = names.keras_hub_shapes(config)
    projection = encoder.embeddings_project is not None
    weights = {
        k: names.to_keras_hub(variables[o].numpy(), shapes[k])
        for k, o in names.network_pairs(config.num_hidden_layers, projection)
    }
    weights.update(_pooler(config))
    kh.warn_once(
        "ELECTRA has no pooler: keras-hub's pooled_dense is written freshly initialised, so its "
        "pooled_output is untrained (use sequence_output[:, 0], or fine-tune)"
    )
    lower = loaded.config.do_lower_case if do_lower_case is None else do_lower_case
    os.makedirs(os.path.join(export_dir, os.path.dirname(kh.VOCAB_FILE)), exist_ok=True)
    _write_json(os.path.join(export_dir, kh.CONFIG_FILE), kh.backbone_json(config, rate))
    write_weights(os.path.join(export_dir, kh.WEIGHTS_FILE), weights, config)
    _write_json(os.path.join(export_dir, kh.TOKENIZER_FILE), kh.tokenizer_json(bool(lower)))
    shutil.copyfile(vocab_file, os.path.join(export_dir, kh.VOCAB_FILE))
    import keras

    metadata = {
        "keras_version": keras.version(),
        "keras_hub_version": kh.LAYOUT_VERSION,
        "parameter_count": int(sum(v.size for v in weights.values())),
        "date_saved": datetime.datetime.now().strftime("%Y-%m-%d@%H:%M:%S"),
        "tasks": [],
    }
    _write_json(os.path.join(export_dir, kh.METADATA_FILE), metadata)
    return sorted(weights)
