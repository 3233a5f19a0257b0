"""The name table between Hugging Face's ELECTRA tensors and the original's variable names (which
are this project's variable paths), and the one layout rule between them.

Names (N = layer index; a network's names are relative: Hugging Face prefixes them with
`electra.` in `ElectraForPreTraining` / `ElectraForMaskedLM` and with nothing in `ElectraModel`;
the original with `electra/` for the discriminator and `generator/` for a separate generator):

    Hugging Face                                 original / this project
    embeddings.word_embeddings.weight            embeddings/word_embeddings
    embeddings.position_embeddings.weight        embeddings/position_embeddings
    embeddings.token_type_embeddings.weight      embeddings/token_type_embeddings
    embeddings.LayerNorm.weight / .bias          embeddings/LayerNorm/gamma / beta
    embeddings_project.weight / .bias            embeddings_project/kernel / bias  (E != H)
    encoder.layer.N.attention.self.query.*       encoder/layer_N/attention/self/query/*
    encoder.layer.N.attention.self.key.*, value  encoder/layer_N/attention/self/key/*, value
    encoder.layer.N.attention.output.dense.*     encoder/layer_N/attention/output/dense/*
    encoder.layer.N.attention.output.LayerNorm.* encoder/layer_N/attention/output/LayerNorm/*
    encoder.layer.N.intermediate.dense.*         encoder/layer_N/intermediate/dense/*
    encoder.layer.N.output.dense.*               encoder/layer_N/output/dense/*
    encoder.layer.N.output.LayerNorm.*           encoder/layer_N/output/LayerNorm/*
  heads (no network prefix on either side):
    discriminator_predictions.dense.*            discriminator_predictions/dense/*
    discriminator_predictions.dense_prediction.* discriminator_predictions/dense_1/*
    generator_predictions.dense.*                generator_predictions/dense/*
    generator_predictions.LayerNorm.*            generator_predictions/LayerNorm/*
    generator_lm_head.bias                       generator_predictions/output_bias
    generator_lm_head.weight                     the word table (tie_word_embeddings true: not
                                                 stored), else generator_predictions/output_weights

Layout: a Linear's `.weight` is [out, in] in PyTorch and a Dense `kernel` [in, out] in Keras (and
TF1), so every `.../kernel` is transposed; LayerNorm `weight`/`bias` are `gamma`/`beta`; embedding
tables and `generator_lm_head.weight` ([vocab, E], used as x @ W^T on both sides) keep their layout.
Everything is float32.
"""

from typing import List, Tuple

import numpy as np

Pairs = List[Tuple[str, str]]  # (Hugging Face name, original name)

HF_NETWORK_PREFIX = "electra."  # the network inside ElectraForPreTraining / ElectraForMaskedLM
DISCRIMINATOR, GENERATOR, ENCODER = "discriminator", "generator", "encoder"
# architecture (config.json `architectures`) <-> what this project calls the network and its head
ARCHITECTURES = {
    DISCRIMINATOR: "ElectraForPreTraining",
    GENERATOR: "ElectraForMaskedLM",
    ENCODER: "ElectraModel",
}
LM_HEAD_WEIGHT = "generator_lm_head.weight"
UNTIED_OUTPUT = "generator_predictions/output_weights"
# a buffer older transformers versions saved with the weights; never a parameter
IGNORED_SUFFIXES = ("embeddings.position_ids",)


def _linear(hf: str, original: str) -> Pairs:
    return [(f"{hf}.weight", f"{original}/kernel"), (f"{hf}.bias", f"{original}/bias")]


def _norm(hf: str, original: str) -> Pairs:
    return [(f"{hf}.weight", f"{original}/gamma"), (f"{hf}.bias", f"{original}/beta")]


EMBEDDINGS: Pairs = [
    ("embeddings.word_embeddings.weight", "embeddings/word_embeddings"),
    ("embeddings.position_embeddings.weight", "embeddings/position_embeddings"),
    ("embeddings.token_type_embeddings.weight", "embeddings/token_type_embeddings"),
    *_norm("embeddings.LayerNorm", "embeddings/LayerNorm"),
]
PROJECTION: Pairs = _linear("embeddings_project", "embeddings_project")
LAYER: Pairs = [
    *_linear("attention.self.query", "attention/self/query"),
    *_linear("attention.self.key", "attention/self/key"),
    *_linear("attention.self.value", "attention/self/value"),
    *_linear("attention.output.dense", "attention/output/dense"),
    *_norm("attention.output.LayerNorm", "attention/output/LayerNorm"),
    *_linear("intermediate.dense", "intermediate/dense"),
    *_linear("output.dense", "output/dense"),
    *_norm("output.LayerNorm", "output/LayerNorm"),
]
HEADS = {
    DISCRIMINATOR: [
        *_linear("discriminator_predictions.dense", "discriminator_predictions/dense"),
        *_linear("discriminator_predictions.dense_prediction", "discriminator_predictions/dense_1"),
    ],
    GENERATOR: [
        *_linear("generator_predictions.dense", "generator_predictions/dense"),
        *_norm("generator_predictions.LayerNorm", "generator_predictions/LayerNorm"),
        ("generator_lm_head.bias", "generator_predictions/output_bias"),
    ],
    ENCODER: [],
}


def network_pairs(num_layers: int, projection: bool) -> Pairs:
    """One encoder's (embeddings, projection, layers) names, relative on both sides."""
    pairs = list(EMBEDDINGS) + (list(PROJECTION) if projection else [])
    for i in range(num_layers):
        pairs += [(f"encoder.layer.{i}.{hf}", f"encoder/layer_{i}/{o}") for hf, o in LAYER]
    return pairs


def head_pairs(architecture: str, tied_output: bool = True) -> Pairs:
    """The head's names (none for the bare encoder); an untied generator adds its output layer."""
    pairs = list(HEADS[architecture])
    if architecture == GENERATOR and not tied_output:
        pairs.append((LM_HEAD_WEIGHT, UNTIED_OUTPUT))
    return pairs


def to_original(original_name: str, value: np.ndarray) -> np.ndarray:
    """A Hugging Face tensor in this project's layout (float32)."""
    value = np.asarray(value, dtype=np.float32)
    return np.ascontiguousarray(value.T) if original_name.endswith("/kernel") else value


def to_huggingface(original_name: str, value: np.ndarray) -> np.ndarray:
    """A variable of this project in Hugging Face's layout (float32, contiguous)."""
    return to_original(original_name, value)  # a transpose is its own inverse
