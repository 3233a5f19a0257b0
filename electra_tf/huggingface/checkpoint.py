"""Reading Hugging Face ELECTRA directories as name-based checkpoints under the original's names.

A directory (`electra_tf.foreign_dirs.huggingface_dirs` finds them) holds one of
`ElectraForPreTraining` (the discriminator and its head), `ElectraForMaskedLM` (a generator and
its head) or `ElectraModel` (an encoder), told apart by the head tensors it has. Its tensors are
checked against the network its config.json describes (every missing, unexpected or misshapen
tensor is listed in one error), converted by the name table (`names`), and handed to the
restore functions of `electra_tf.checkpoint.restore` through a `TensorReader`, the interface of
`tf.train.load_checkpoint`'s reader. Only safetensors are read (with the `safetensors` package's
numpy API: no torch, no pickle).
"""

import dataclasses
import os
from typing import Dict, List

import numpy as np

from electra_tf import foreign_dirs as fd
from electra_tf.errors import UserError, weight_problems
from electra_tf.huggingface import names
from electra_tf.huggingface.config import read_run_config, tie_word_embeddings
from electra_tf.io_utils import read_json
from electra_tf.keras_hub.preset import read_preset
from electra_tf.model_config import ModelConfig


@dataclasses.dataclass
class HFModel:
    """One Hugging Face directory (or keras-hub preset, an encoder), in this project's names
    and layouts.

    Attributes:
        path: the directory.
        architecture: "discriminator", "generator" or "encoder" (`names.ARCHITECTURES`).
        config: the encoder's `ModelConfig` (from config.json).
        hf_config: config.json itself.
        tied_output: a generator's output layer is its word embeddings (tie_word_embeddings).
        network: the encoder's tensors under relative original names ("embeddings/...",
            "encoder/layer_0/...", "embeddings_project/...").
        head: the head's tensors under the original's names ("discriminator_predictions/...").
    """

    path: str
    architecture: str
    config: ModelConfig
    hf_config: dict
    tied_output: bool
    network: Dict[str, np.ndarray]
    head: Dict[str, np.ndarray]

    @property
    def config_path(self) -> str:
        return os.path.join(self.path, fd.CONFIG_FILE)

    def check_generator_head(self) -> None:
        """transformers' generator head applies the exact GELU whatever `hidden_act` says; this
        project's applies `hidden_act`: only "gelu" loads exactly."""
        if self.architecture == names.GENERATOR and self.config.hidden_act != "gelu":
            raise UserError(
                f"{self.config_path}: hidden_act {self.hf_config.get('hidden_act')!r}: "
                "transformers' generator_predictions applies gelu whatever hidden_act is, this "
                "project's generator head applies hidden_act, so only gelu loads exactly"
            )


def _load_tensors(directory: str) -> Dict[str, np.ndarray]:
    from safetensors.numpy import load_file

    single = os.path.join(directory, fd.HF_WEIGHTS_FILE)
    if os.path.exists(single):
        files = [single]
    else:
        index = os.path.join(directory, fd.HF_WEIGHTS_INDEX_FILE)
        weight_map = read_json(index).get("weight_map")
        if not isinstance(weight_map, dict):
            raise UserError(f"{index}: no weight_map")
        files = [os.path.join(directory, f) for f in sorted(set(weight_map.values()))]
    tensors: Dict[str, np.ndarray] = {}
    for f in files:
        try:
            tensors.update(load_file(f))
        except TypeError as e:  # numpy has no bfloat16
            raise UserError(
                f"{f}: {e}; save the model in float32 first (model.float().save_pretrained(DIR))"
            ) from None
        except (OSError, ValueError, RuntimeError) as e:
            raise UserError(f"{f}: not a readable safetensors file ({e})") from None
    return tensors


def _hf_shapes(c: ModelConfig) -> Dict[str, list]:
    """Hugging Face's shape of each relative tensor name (layer names without the layer)."""
    e, h, i, v = c.embedding_size, c.hidden_size, c.intermediate_size, c.vocab_size
    linear = lambda out, inp: ([out, inp], [out])  # noqa: E731
    shapes: Dict[str, list] = {
        "embeddings.word_embeddings.weight": [v, e],
        "embeddings.position_embeddings.weight": [c.max_position_embeddings, e],
        "embeddings.token_type_embeddings.weight": [c.type_vocab_size, e],
        "embeddings.LayerNorm.weight": [e],
        "embeddings.LayerNorm.bias": [e],
        "generator_lm_head.weight": [v, e],
        "generator_lm_head.bias": [v],
        "generator_predictions.LayerNorm.weight": [e],
        "generator_predictions.LayerNorm.bias": [e],
        "attention.output.LayerNorm.weight": [h],
        "attention.output.LayerNorm.bias": [h],
        "output.LayerNorm.weight": [h],
        "output.LayerNorm.bias": [h],
    }
    for name, (out, inp) in {
        "embeddings_project": (h, e),
        "attention.self.query": (h, h),
        "attention.self.key": (h, h),
        "attention.self.value": (h, h),
        "attention.output.dense": (h, h),
        "intermediate.dense": (i, h),
        "output.dense": (h, i),
        "discriminator_predictions.dense": (h, h),
        "discriminator_predictions.dense_prediction": (1, h),
        "generator_predictions.dense": (e, h),
    }.items():
        shapes[f"{name}.weight"], shapes[f"{name}.bias"] = linear(out, inp)
    return shapes


def _expected_shape(name: str, shapes: Dict[str, list]) -> list:
    name = name[len(names.HF_NETWORK_PREFIX) :] if name.startswith("electra.") else name
    if name.startswith("encoder.layer."):
        name = name.split(".", 3)[3]
    return shapes[name]


def read_model(directory: str) -> HFModel:
    """Reads and checks one Hugging Face directory (see the module docstring)."""
    run = read_run_config(directory)
    config, hf = run.model_config, run.extra["huggingface"]
    tensors = _load_tensors(directory)
    weights = os.path.join(directory, fd.HF_WEIGHTS_FILE)
    has_disc = any(n.startswith("discriminator_predictions.") for n in tensors)
    has_gen = any(n.startswith(("generator_predictions.", "generator_lm_head.")) for n in tensors)
    if has_disc and has_gen:
        raise UserError(f"{weights}: holds both a discriminator and a generator head")
    arch = names.DISCRIMINATOR if has_disc else names.GENERATOR if has_gen else names.ENCODER
    tied = tie_word_embeddings(hf, run.path) if arch == names.GENERATOR else True
    prefix = names.HF_NETWORK_PREFIX if any(n.startswith("electra.") for n in tensors) else ""
    projection = config.embedding_size != config.hidden_size
    expected = {
        prefix + hf_name: o
        for hf_name, o in names.network_pairs(config.num_hidden_layers, projection)
    }
    head_names = dict(names.head_pairs(arch, tied))
    expected.update(head_names)
    ignored = {n for n in tensors if n.endswith(names.IGNORED_SUFFIXES)}
    word = prefix + names.EMBEDDINGS[0][0]
    if tied and names.LM_HEAD_WEIGHT in tensors and word in tensors:
        # older transformers versions stored the tied copy too; it must be the same table
        if not np.array_equal(tensors[names.LM_HEAD_WEIGHT], tensors[word]):
            raise UserError(
                f"{weights}: {names.LM_HEAD_WEIGHT} differs from {word} but config.json says "
                "tie_word_embeddings true"
            )
        ignored.add(names.LM_HEAD_WEIGHT)
    missing = sorted(set(expected) - set(tensors))
    unexpected = sorted(set(tensors) - set(expected) - ignored)
    shapes = _hf_shapes(config)
    bad = [
        f"{n} is {list(tensors[n].shape)}, config.json says {_expected_shape(n, shapes)}"
        for n in sorted(expected)
        if n in tensors and list(tensors[n].shape) != _expected_shape(n, shapes)
    ]
    problems = weight_problems(missing, unexpected, bad, "tensor")
    if problems:
        what = names.ARCHITECTURES[arch]
        raise UserError(f"{weights} (read as {what}): " + "; ".join(problems))
    network, head = {}, {}
    for hf_name, original in expected.items():
        target = head if hf_name in head_names else network
        target[original] = names.to_original(original, tensors[hf_name])
    return HFModel(directory, arch, config, hf, tied, network, head)


def read_source(path: str) -> List[HFModel]:
    """The models of one directory or of a "DISC_DIR,GEN_DIR" pair (checked to fit together);
    a keras-hub preset is read as an `ElectraModel` (`electra_tf.keras_hub.preset`)."""
    if fd.is_preset(path):
        config, d, network = read_preset(path)
        return [HFModel(path, names.ENCODER, config, d, True, network, {})]
    dirs = fd.huggingface_dirs(path)
    if dirs is None:
        raise UserError(f"{path}: not a Hugging Face directory (no config.json with model_type)")
    models = [read_model(d) for d in dirs]
    if len(models) == 2:
        disc, gen = models
        if disc.architecture == names.GENERATOR or gen.architecture != names.GENERATOR:
            raise UserError(
                f"{path}: a pair is DISC_DIR,GEN_DIR: the second an ElectraForMaskedLM, the "
                f"first not (found {names.ARCHITECTURES[disc.architecture]}, "
                f"{names.ARCHITECTURES[gen.architecture]})"
            )
        for key in ("vocab_size", "max_position_embeddings", "type_vocab_size"):
            if getattr(disc.config, key) != getattr(gen.config, key):
                raise UserError(
                    f"{gen.config_path}: {key} {getattr(gen.config, key)} differs from the "
                    f"discriminator's {getattr(disc.config, key)} ({disc.config_path})"
                )
        vocabs = [os.path.join(m.path, fd.HF_VOCAB_FILE) for m in models]
        if all(os.path.exists(v) for v in vocabs):
            if open(vocabs[0], "rb").read() != open(vocabs[1], "rb").read():
                raise UserError(f"{vocabs[1]} differs from {vocabs[0]}")
    return models


def embeddings_shared(disc: HFModel, gen: HFModel) -> bool:
    """True when the generator's embeddings are the discriminator's (as the original trains
    them, and as Google's released pairs are)."""
    keys = [o for _, o in names.EMBEDDINGS]
    return all(
        disc.network[k].shape == gen.network[k].shape
        and np.array_equal(disc.network[k], gen.network[k])
        for k in keys
    )


def place(model: HFModel, scope: str, embeddings_scope: str, head: bool) -> Dict[str, np.ndarray]:
    """The model's tensors under full original names: its encoder under `scope` ("electra",
    "generator"), its embeddings under `embeddings_scope`, and its head when `head`."""
    out = {}
    for rel, value in model.network.items():
        out[f"{embeddings_scope if rel.startswith('embeddings/') else scope}/{rel}"] = value
    if head:
        out.update(model.head)
    return out


class TensorReader:
    """`tf.train.load_checkpoint`'s reader interface over arrays under the original's names."""

    def __init__(self, tensors: Dict[str, np.ndarray], source: str):
        self.tensors = tensors
        self.source = source
        self.format = "keras_hub" if fd.is_preset(source) else "huggingface"  # what reports say

    def get_variable_to_shape_map(self) -> Dict[str, list]:
        return {k: list(v.shape) for k, v in self.tensors.items()}

    def get_tensor(self, name: str) -> np.ndarray:
        return self.tensors[name]


def encoder_reader(path: str) -> TensorReader:
    """The encoder of a directory (the discriminator's of a pair) under `electra/`: what
    fine-tuning starts from (any of the three architectures)."""
    model = read_source(path)[0]
    return TensorReader(place(model, "electra", "electra", head=False), path)


def pretrainer_reader(
    path: str, separate_generator: bool, tied_embeddings: bool, head: bool = True
) -> TensorReader:
    """Tensors for a pretrainer's networks: a discriminator (or encoder) under `electra/`; a
    generator under `generator/` when the pretrainer has a separate generator network (its
    embeddings under `electra/` when `tied_embeddings`), else as the discriminator network
    itself. The heads come along when `head`. A pair's shared names must agree."""
    tensors: Dict[str, np.ndarray] = {}
    for model in read_source(path):
        if model.architecture == names.GENERATOR and separate_generator:
            placed = place(model, "generator", "electra" if tied_embeddings else "generator", head)
        else:
            placed = place(model, "electra", "electra", head)
        for name, value in placed.items():
            if name in tensors and not (
                tensors[name].shape == value.shape and np.array_equal(tensors[name], value)
            ):
                raise UserError(
                    f"{path}: the generator's {name} differs from the discriminator's, but the "
                    "model shares it"
                    + (" (set untied_generator_embeddings=true)" if separate_generator else "")
                )
            tensors[name] = value
    return TensorReader(tensors, path)
