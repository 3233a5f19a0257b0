"""The table between keras-hub's ElectraBackbone weights and the original's variable names (this
project's variable paths), where each weight lies in model.weights.h5, and the layout rule.

Names (N = layer index; original names relative to the network scope, as in
`electra_tf.huggingface.names`):

    keras-hub (variable path)                              original / this project
    token_embedding/embeddings                             embeddings/word_embeddings
    position_embedding/embeddings                          embeddings/position_embeddings
    segment_embedding/embeddings                           embeddings/token_type_embeddings
    embeddings_layer_norm/gamma, beta                      embeddings/LayerNorm/gamma, beta
    embeddings_projection/kernel, bias                     embeddings_project/kernel, bias (E != H)
    transformer_layer_N/self_attention_layer/query/*       encoder/layer_N/attention/self/query/*
      .../key/*, .../value/*                               .../attention/self/key/*, value/*
    transformer_layer_N/self_attention_layer/attention_output/*
                                                           encoder/layer_N/attention/output/dense/*
    transformer_layer_N/self_attention_layer_norm/*        .../attention/output/LayerNorm/*
    transformer_layer_N/feedforward_intermediate_dense/*   encoder/layer_N/intermediate/dense/*
    transformer_layer_N/feedforward_output_dense/*         encoder/layer_N/output/dense/*
    transformer_layer_N/feedforward_layer_norm/*           encoder/layer_N/output/LayerNorm/*
    pooled_dense/kernel, bias                              none: ELECTRA's discriminator has no
                                                           pooler (keras-hub's tanh dense on [CLS])

Where: Keras 3 saves a layer's variables in `<group>/vars/<index>` (index in creation order:
kernel/gamma/embeddings 0, bias/beta 1), the group of a model's layer being `layers/` and its
class name in snake case with a counter in `model.layers` order (`reversible_embedding`,
`transformer_encoder_1`, `dense_1`), nested layers under their attribute (`_self_attention_layer/
query_dense`); every group's `vars` carries the layer's `name` attribute, by which reading finds
the layers.

Layout: Keras' MultiHeadAttention keeps query/key/value kernels as [H, heads, H / heads] and
their biases as [heads, H / heads], the output kernel as [heads, H / heads, H]; the original's
are [H, H] and [H] (heads side by side): a row-major reshape, nothing transposed. All other
weights keep their layout. Everything is float32.
"""

from typing import Dict, List, Tuple

import numpy as np

from electra_tf.model_config import ModelConfig

Pairs = List[Tuple[str, str]]  # (keras-hub variable path, original name)

POOLER = ("pooled_dense/kernel", "pooled_dense/bias")
EMBEDDINGS: Pairs = [
    ("token_embedding/embeddings", "embeddings/word_embeddings"),
    ("position_embedding/embeddings", "embeddings/position_embeddings"),
    ("segment_embedding/embeddings", "embeddings/token_type_embeddings"),
    ("embeddings_layer_norm/gamma", "embeddings/LayerNorm/gamma"),
    ("embeddings_layer_norm/beta", "embeddings/LayerNorm/beta"),
]
PROJECTION: Pairs = [
    ("embeddings_projection/kernel", "embeddings_project/kernel"),
    ("embeddings_projection/bias", "embeddings_project/bias"),
]
# sub-layer of a transformer_layer_N -> (its original scope, its h5 group inside the layer's)
SUBLAYERS = {
    "self_attention_layer/query": ("attention/self/query", "_self_attention_layer/query_dense"),
    "self_attention_layer/key": ("attention/self/key", "_self_attention_layer/key_dense"),
    "self_attention_layer/value": ("attention/self/value", "_self_attention_layer/value_dense"),
    "self_attention_layer/attention_output": (
        "attention/output/dense",
        "_self_attention_layer/output_dense",
    ),
    "self_attention_layer_norm": ("attention/output/LayerNorm", "_self_attention_layer_norm"),
    "feedforward_intermediate_dense": ("intermediate/dense", "_feedforward_intermediate_dense"),
    "feedforward_output_dense": ("output/dense", "_feedforward_output_dense"),
    "feedforward_layer_norm": ("output/LayerNorm", "_feedforward_layer_norm"),
}
VAR_INDEX = {"kernel": 0, "gamma": 0, "embeddings": 0, "bias": 1, "beta": 1}
_NORMS = ("self_attention_layer_norm", "feedforward_layer_norm")


def layer_pairs(i: int) -> Pairs:
    pairs = []
    for sub, (original, _) in SUBLAYERS.items():
        for var in ("gamma", "beta") if sub in _NORMS else ("kernel", "bias"):
            pairs.append(
                (f"transformer_layer_{i}/{sub}/{var}", f"encoder/layer_{i}/{original}/{var}")
            )
    return pairs


def network_pairs(num_layers: int, projection: bool) -> Pairs:
    """The encoder's (keras-hub, original) names: embeddings, projection, layers."""
    pairs = list(EMBEDDINGS) + (list(PROJECTION) if projection else [])
    for i in range(num_layers):
        pairs += layer_pairs(i)
    return pairs


def location(name: str) -> Tuple[str, str, int]:
    """Where a keras-hub variable lies in model.weights.h5: (its top-level layer's name, its
    group inside that layer's group ("" for the layer itself), its index in `vars`)."""
    layer, rest = name.split("/", 1)
    sub, var = rest.rsplit("/", 1) if "/" in rest else ("", rest)
    inner = SUBLAYERS[sub][1] if layer.startswith("transformer_layer_") else ""
    return layer, inner, VAR_INDEX[var]


def keras_hub_shapes(c: ModelConfig) -> Dict[str, Tuple[int, ...]]:
    """keras-hub's shape of each variable (pooled_dense included) of an encoder `c`."""
    e, h, i, n = c.embedding_size, c.hidden_size, c.intermediate_size, c.num_attention_heads
    d = h // n
    shapes = {
        "token_embedding/embeddings": (c.vocab_size, e),
        "position_embedding/embeddings": (c.max_position_embeddings, e),
        "segment_embedding/embeddings": (c.type_vocab_size, e),
        "embeddings_layer_norm/gamma": (e,),
        "embeddings_layer_norm/beta": (e,),
        "embeddings_projection/kernel": (e, h),
        "embeddings_projection/bias": (h,),
        "pooled_dense/kernel": (h, h),
        "pooled_dense/bias": (h,),
    }
    per_layer = {
        "self_attention_layer/query/kernel": (h, n, d),
        "self_attention_layer/query/bias": (n, d),
        "self_attention_layer/key/kernel": (h, n, d),
        "self_attention_layer/key/bias": (n, d),
        "self_attention_layer/value/kernel": (h, n, d),
        "self_attention_layer/value/bias": (n, d),
        "self_attention_layer/attention_output/kernel": (n, d, h),
        "self_attention_layer/attention_output/bias": (h,),
        "self_attention_layer_norm/gamma": (h,),
        "self_attention_layer_norm/beta": (h,),
        "feedforward_intermediate_dense/kernel": (h, i),
        "feedforward_intermediate_dense/bias": (i,),
        "feedforward_output_dense/kernel": (i, h),
        "feedforward_output_dense/bias": (h,),
        "feedforward_layer_norm/gamma": (h,),
        "feedforward_layer_norm/beta": (h,),
    }
    for layer in range(c.num_hidden_layers):
        shapes.update({f"transformer_layer_{layer}/{k}": v for k, v in per_layer.items()})
    return shapes


def to_original(name: str, value: np.ndarray, hidden_size: int) -> np.ndarray:
    """keras-hub's weight `name` in this project's layout: attention kernels [H, H] and biases
    [H] (a reshape), everything else as it is."""
    value = np.asarray(value, dtype=np.float32)
    if "/self_attention_layer/" in name:
        kernel = name.endswith("/kernel")
        return value.reshape((hidden_size, hidden_size) if kernel else (hidden_size,))
    return value


def to_keras_hub(value: np.ndarray, shape: Tuple[int, ...]) -> np.ndarray:
    """A variable of this project in keras-hub's layout `shape` (float32, contiguous)."""
    return np.ascontiguousarray(np.asarray(value, dtype=np.float32).reshape(shape))
