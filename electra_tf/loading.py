"""Rebuilding the pretraining networks from a checkpoint on disk (this project's or an original
google-research one): the discriminator and generator encoders and their heads, restored and
checked against the model config found beside the checkpoint (see `electra_tf.run_dir`)."""

import dataclasses
import re
from typing import Dict, Optional, Sequence, Tuple

import tensorflow as tf

from electra_tf import checkpoints, run_dir
from electra_tf.errors import UserError
from electra_tf.model_config import ModelConfig
from electra_tf.modeling.encoder import TransformerEncoder
from electra_tf.modeling.heads import DiscriminatorHead, MaskedLMHead

HEADS = ("discriminator", "generator", "encoder")
PARTS = ("discriminator", "generator", "generator_predictions", "discriminator_predictions")
HEAD_PARTS = {
    "discriminator": ("discriminator", "discriminator_predictions"),
    "generator": ("generator", "generator_predictions"),
    "encoder": ("discriminator",),
}


class Networks(tf.Module):
    """The pretraining networks rebuilt for export; absent parts are None. The attribute names
    are those of `ElectraPretrainer`, so the object graph of its checkpoints matches."""

    def __init__(self, discriminator, generator, generator_predictions, discriminator_predictions):
        super().__init__(name="networks")
        self.discriminator = discriminator
        self.generator = generator
        self.generator_predictions = generator_predictions
        self.discriminator_predictions = discriminator_predictions

    def weights_of(self, parts: Sequence[str]) -> list:
        out = []
        for part in parts:
            layer = getattr(self, part)
            if layer is not None:
                out += [w for w in layer.weights if all(w is not o for o in out)]
        return out


def build_networks(
    disc: ModelConfig,
    gen: Optional[ModelConfig],
    parts: Sequence[str],
    untied_generator_embeddings: bool = False,
) -> Networks:
    """Builds the networks named in `parts` with the original's variable names. `gen` None with
    a generator part: the generator is the discriminator (untied_generator=False, masked LM)."""
    discriminator = TransformerEncoder(disc, name="electra")
    discriminator.build()  # first and at the top level: `electra/...`, shared `electra/embeddings`
    generator = None
    if "generator" in parts or "generator_predictions" in parts:
        if gen is None:
            generator = discriminator
        else:
            shared = None if untied_generator_embeddings else discriminator.embeddings
            generator = TransformerEncoder(gen, embeddings=shared, name="generator")
            generator.build()
    gen_head = disc_head = None
    if "generator_predictions" in parts:
        c = generator.config
        gen_head = MaskedLMHead(generator.embeddings, c.hidden_act, c.initializer_range)
        gen_head.build((None, None, c.hidden_size))
    if "discriminator_predictions" in parts:
        disc_head = DiscriminatorHead(disc.hidden_size, disc.hidden_act, disc.initializer_range)
        disc_head.build((None, None, disc.hidden_size))
    return Networks(discriminator, generator, gen_head, disc_head)


def infer_generator_config(disc: ModelConfig, shapes: Dict[str, list]) -> Optional[ModelConfig]:
    """The generator config of an original checkpoint from its variable shapes (None when it has
    no separate generator). Heads follow the original's rule, max(1, hidden // 64)."""
    layers = {
        int(m.group(1)) for n in shapes if (m := re.match(r"generator/encoder/layer_(\d+)/", n))
    }
    if not layers:
        return None
    hidden = shapes["generator/encoder/layer_0/attention/self/query/kernel"][1]
    emb = shapes.get("generator/embeddings/word_embeddings", [0, disc.embedding_size])[1]
    return dataclasses.replace(
        disc,
        hidden_size=hidden,
        embedding_size=emb,
        num_hidden_layers=max(layers) + 1,
        num_attention_heads=max(1, hidden // 64),
        intermediate_size=shapes["generator/encoder/layer_0/intermediate/dense/kernel"][1],
    )


@dataclasses.dataclass
class Loaded:
    networks: Networks
    parts: Tuple[str, ...]
    config: run_dir.RunConfig
    generator_config: Optional[ModelConfig]
    prefix: str
    report: checkpoints.RestoreReport
    step: Optional[int]


def _contents(prefix: str) -> Tuple[Dict[str, bool], bool, Optional[str]]:
    """Which parts a checkpoint holds, whether the generator has its own embeddings, and the
    key of the discriminator's word embeddings."""
    shapes = tf.train.load_checkpoint(prefix).get_variable_to_shape_map()
    if checkpoints.is_object_based(prefix):
        children = checkpoints.object_children(prefix, "model")
        disc_path = checkpoints.discriminator_object_path(prefix)
        has = {p: p in children for p in PARTS}
        has["discriminator"] = True
        graph = checkpoints.object_graph(prefix)
        node = lambda path: checkpoints.find_node(graph, path)  # noqa: E731
        # a generator that is the discriminator (untied_generator=False) is no separate network
        has["generator"] = has["generator"] and node("model/generator") != node(disc_path)
        untied = has["generator"] and node("model/generator/embeddings") != node(
            f"{disc_path}/embeddings"
        )
        key = f"{disc_path}/embeddings/word_embeddings/.ATTRIBUTES/VARIABLE_VALUE"
        return has, untied, key if key in shapes else None
    has = {
        "discriminator": any(n.startswith("electra/") for n in shapes),
        "generator": any(n.startswith("generator/") for n in shapes),
        "generator_predictions": "generator_predictions/output_bias" in shapes,
        "discriminator_predictions": "discriminator_predictions/dense/kernel" in shapes,
    }
    untied = "generator/embeddings/word_embeddings" in shapes
    key = "electra/embeddings/word_embeddings"
    return has, untied, key if key in shapes else None


def load_networks(
    checkpoint: str, model_config: Optional[str] = None, head: Optional[str] = None
) -> Loaded:
    """Rebuilds and restores the networks a head needs (`head` None: every network the
    checkpoint holds) from a checkpoint prefix or directory, ours or an original one."""
    prefix = run_dir.resolve_checkpoint(checkpoint)
    config_path = model_config or run_dir.find_beside(prefix, run_dir.CONFIG_FILES)
    if config_path is None:
        raise UserError(f"{prefix}: no config.json beside the checkpoint; pass --model_config")
    config = run_dir.read_run_config(config_path)
    object_based = checkpoints.is_object_based(prefix)
    reader = tf.train.load_checkpoint(prefix)
    shapes = reader.get_variable_to_shape_map()
    has, untied, emb_key = _contents(prefix)
    if emb_key is None:
        raise UserError(f"{prefix}: the checkpoint holds no discriminator embeddings")
    rows = shapes[emb_key][0]
    if rows != config.model_config.vocab_size:
        raise UserError(
            f"{config_path}: vocab_size {config.model_config.vocab_size} does not match the checkpoint "
            f"({prefix} has {rows} word embeddings, shape {shapes[emb_key]})"
        )
    if head is None:
        parts = tuple(p for p in PARTS if has[p])
    else:
        parts = HEAD_PARTS[head]
        if head == "generator" and not has["generator"]:
            parts = ("discriminator", "generator_predictions")  # generator = discriminator
        absent = [p for p in parts if not has[p]]
        if absent:
            raise UserError(f"{prefix}: --head={head} needs {', '.join(absent)}, not in it")
    gen_config = None
    if "generator" in parts:
        gen_config = config.generator_config
        if gen_config is None and not object_based:
            gen_config = infer_generator_config(config.model_config, shapes)
        if gen_config is None:
            raise UserError(
                f"{config_path}: no generator_config; pass the run's config.json as --model_config"
            )
    networks = build_networks(config.model_config, gen_config, parts, untied)
    needed = networks.weights_of(parts)  # with the shared embeddings where tied
    if object_based:
        disc_path = checkpoints.discriminator_object_path(prefix)
        roots = {disc_path: networks.discriminator}
        for part in PARTS[1:]:
            if part in parts and getattr(networks, part) is not networks.discriminator:
                roots[f"model/{part}"] = getattr(networks, part)
        report = checkpoints.restore_objects(roots, prefix, needed, what="model config")
        step_key = "step/.ATTRIBUTES/VARIABLE_VALUE"
    else:
        report = checkpoints.restore_by_name(needed, prefix, what="model config")
        step_key = "global_step"
    step = int(reader.get_tensor(step_key)) if step_key in shapes else None
    return Loaded(networks, parts, config, gen_config, prefix, report, step)
