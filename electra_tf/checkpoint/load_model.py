"""Rebuilding a pretraining model from a checkpoint on disk, this project's, an original
google-research one or Hugging Face directories, through the one builder
(`pretraining_networks.build_pretrainer`).

The config comes from the run directory (`electra_tf.run_dir`): a pretraining run's config.json
gives the exact model it trained (objective heads included); a bare BERT JSON (`bert_config.json`
of an original release, or an exported original-layout directory) gives the discriminator, and the
generator's shape is read off the checkpoint's variables. A Hugging Face directory's config.json
gives its network: an `ElectraForPreTraining` is the discriminator and its head, an
`ElectraForMaskedLM` a generator that is the only network (the discriminator network of a model
whose generator is the discriminator) with its head, an `ElectraModel` the encoder; a
"DISC_DIR,GEN_DIR" pair both networks, the embeddings tied when the two hold the same ones.
"""

import dataclasses
import os
import re
from typing import Dict, Optional, Tuple

import tensorflow as tf

from electra_tf import run_dir, vocab
from electra_tf.checkpoint import locate, restore
from electra_tf.errors import UserError
from electra_tf.foreign_dirs import foreign_dirs
from electra_tf.huggingface import checkpoint as hf
from electra_tf.huggingface.names import DISCRIMINATOR, GENERATOR
from electra_tf.model_config import ModelConfig
from electra_tf.modeling.pretrainer import UNIFORM, UNIGRAM, ElectraPretrainer
from electra_tf.pretraining_config import PRETRAINING_DEFAULTS, PretrainingConfig
from electra_tf.pretraining_networks import build_pretrainer

HEADS = ("discriminator", "generator", "encoder")
PARTS = ("discriminator", "generator", "generator_predictions", "discriminator_predictions")
HEAD_PARTS = {
    "discriminator": ("discriminator", "discriminator_predictions"),
    "generator": ("generator", "generator_predictions"),
    "encoder": ("discriminator",),
}


def run_hparams(run: run_dir.RunConfig) -> Dict:
    """The flat hparams of a pretraining run's config.json that rebuild its model: the known
    keys, with the generator config it resolved (config.json keeps the resolved one, not the
    `generator_config` hparam)."""
    hparams = {k: v for k, v in run.hparams.items() if k in PRETRAINING_DEFAULTS}
    if run.generator_config is not None:
        hparams["generator_config"] = run.generator_config.to_dict()
    return hparams


def pretraining_config_for(
    run: run_dir.RunConfig,
    generator: Optional[ModelConfig] = None,
    untied_embeddings: bool = False,
    name: str = "loaded",
    data_dir: str = ".",
    **overrides,
) -> PretrainingConfig:
    """A `PretrainingConfig` that builds the model `run` describes. A bare model config (kind
    "model") gives an ELECTRA with that discriminator and `generator` (None: the generator is the
    discriminator itself, as an MLM head on it)."""
    if run.kind == run_dir.PRETRAINING:
        hparams = run_hparams(run)
    else:
        disc = run.model_config
        layers = {
            k: v for k, v in disc.to_dict().items() if k not in ("vocab_size", "embedding_size")
        }
        hparams = dict(
            model_hparam_overrides=layers,
            embedding_size=disc.embedding_size,
            vocab_size=disc.vocab_size,
            max_seq_length=min(128, disc.max_position_embeddings),
        )
        if generator is None:
            hparams.update(untied_generator=False, generator_hidden_size=1.0)
        else:
            hparams.update(
                generator_config=generator.to_dict(),
                untied_generator_embeddings=untied_embeddings,
            )
    hparams.update(overrides)
    return PretrainingConfig.from_flat(name, data_dir, hparams)


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
    """A model rebuilt from a checkpoint, with the parts (`PARTS`) that were restored.

    `networks` is the `ElectraPretrainer`; only the weights of `parts` hold the checkpoint's
    values (`networks.weights_of(parts)`)."""

    networks: ElectraPretrainer
    parts: Tuple[str, ...]
    config: run_dir.RunConfig
    generator_config: Optional[ModelConfig]
    prefix: str
    report: restore.RestoreReport
    step: Optional[int]
    pretraining_config: Optional[PretrainingConfig] = None  # what built `networks`


def _contents(prefix: str) -> Tuple[Dict[str, bool], bool, Optional[str]]:
    """Which parts a checkpoint holds, whether the generator has its own embeddings, and the
    key of the discriminator's word embeddings."""
    shapes = tf.train.load_checkpoint(prefix).get_variable_to_shape_map()
    if restore.is_object_based(prefix):
        children = restore.object_children(prefix, "model")
        disc_path = restore.discriminator_object_path(prefix)
        has = {p: p in children for p in PARTS}
        has["discriminator"] = True
        graph = restore.object_graph(prefix)
        node = lambda path: restore.find_node(graph, path)  # noqa: E731
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


def _parts(prefix: str, has: Dict[str, bool], head: Optional[str]) -> Tuple[str, ...]:
    if head is None:
        return tuple(p for p in PARTS if has.get(p))
    parts = HEAD_PARTS[head]
    if head == "generator" and not has.get("generator"):
        parts = ("discriminator", "generator_predictions")  # generator = discriminator
    absent = [p for p in parts if not has.get(p)]
    if absent:
        raise UserError(f"{prefix}: --head={head} needs {', '.join(absent)}, not in it")
    return parts


# float32, no sampling in exported models (the unigram table is data)
EXPORT_OVERRIDES = dict(precision="float32", distribution="one_device")


def _load_huggingface(
    prefix: str, head: Optional[str], special_ids: Dict[str, int], overrides: Dict
) -> Loaded:
    models = hf.read_source(prefix)
    first, gen = models[0], (models[1] if len(models) == 2 else None)
    config = locate.read_run_config(first.config_path)
    if config.kind == run_dir.KERAS_HUB and head in ("discriminator", "generator"):
        raise UserError(
            f"{prefix}: a keras-hub ElectraBackbone preset is the encoder alone (no "
            f"{head} head): use --head=encoder"
        )
    has = {"discriminator": True, "generator": gen is not None}
    has["discriminator_predictions"] = first.architecture == DISCRIMINATOR
    has["generator_predictions"] = gen is not None or first.architecture == GENERATOR
    if head == "discriminator" and gen is None and first.architecture == GENERATOR:
        raise UserError(f"{prefix}: an ElectraForMaskedLM (a generator): use --head=generator")
    parts = _parts(prefix, has, head)
    untied = gen is not None and not hf.embeddings_shared(first, gen)
    generator = gen or first
    if "generator_predictions" in parts:
        generator.check_generator_head()
    # a generator saved with tie_word_embeddings false keeps its own output table
    tied = generator.tied_output or "generator_predictions" not in parts
    pconfig = pretraining_config_for(
        config,
        gen.config if gen else None,
        untied,
        **{"tied_output_embeddings": tied, **overrides},
    )
    networks = build_pretrainer(pconfig, config.model_config.vocab_size, special_ids)
    reader = hf.pretrainer_reader(prefix, gen is not None, not untied)
    needed = networks.weights_of(parts)
    report = restore.restore_by_name(needed, prefix, what="model config", reader=reader)
    gen_config = gen.config if gen is not None and "generator" in parts else None
    return Loaded(networks, parts, config, gen_config, prefix, report, None, pconfig)


def load_networks(
    checkpoint: str,
    model_config: Optional[str] = None,
    head: Optional[str] = None,
    data_dir: str = ".",
    special_ids: Optional[Dict[str, int]] = None,
    **overrides,
) -> Loaded:
    """Rebuilds the model and restores the parts a head needs (`head` None: every part the
    checkpoint holds) from a checkpoint prefix or directory, ours, an original one or Hugging
    Face directories (their own config.json: `model_config` does not apply), in float32.
    `data_dir` and `overrides` (flat pretraining hparams, e.g. max_seq_length) go to the
    `PretrainingConfig` that builds it; `special_ids` (default BERT uncased's) matter only to
    masking."""
    prefix = locate.resolve_checkpoint(checkpoint)
    special_ids = dict(special_ids or vocab.BERT_UNCASED_SPECIAL_IDS)
    if foreign_dirs(prefix):  # Hugging Face directories, a keras-hub preset
        overrides = {**EXPORT_OVERRIDES, **overrides, "data_dir": data_dir}
        return _load_huggingface(prefix, head, special_ids, overrides)
    config_path = model_config or locate.find_beside(prefix, run_dir.CONFIG_FILES)
    if config_path is None:
        raise UserError(f"{prefix}: no config.json beside the checkpoint; pass --model_config")
    config = locate.read_run_config(config_path)
    object_based = restore.is_object_based(prefix)
    reader = tf.train.load_checkpoint(prefix)
    shapes = reader.get_variable_to_shape_map()
    has, untied, emb_key = _contents(prefix)
    if emb_key is None:
        raise UserError(f"{prefix}: the checkpoint holds no discriminator embeddings")
    rows = shapes[emb_key][0]
    if rows != config.model_config.vocab_size:
        raise UserError(
            f"{config_path}: vocab_size {config.model_config.vocab_size} does not match the "
            f"checkpoint ({prefix} has {rows} word embeddings, shape {shapes[emb_key]})"
        )
    parts = _parts(prefix, has, head)
    gen_config = None
    if "generator" in parts:
        gen_config = config.generator_config
        if gen_config is None and not object_based:
            gen_config = infer_generator_config(config.model_config, shapes)
        if gen_config is None:
            raise UserError(
                f"{config_path}: no generator_config; pass the run's config.json as --model_config"
            )
    overrides = {**EXPORT_OVERRIDES, **overrides}
    if config.kind == run_dir.PRETRAINING and config.hparams.get("uniform_generator") == UNIGRAM:
        overrides["uniform_generator"] = UNIFORM
    pconfig = pretraining_config_for(config, gen_config, untied, data_dir=data_dir, **overrides)
    networks = build_pretrainer(pconfig, config.model_config.vocab_size, special_ids)
    if head == "generator" and networks.two_tower:
        raise UserError(
            f"{prefix}: Electric's two-tower cloze generator has no masked-LM export; use "
            "--head=discriminator (or --format=original_checkpoint for every network)"
        )
    needed = networks.weights_of(parts)  # with the shared embeddings where tied
    if object_based:
        disc_path = restore.discriminator_object_path(prefix)
        roots = {disc_path: networks.discriminator}
        for part in PARTS[1:]:
            if part in parts and getattr(networks, part) is not networks.discriminator:
                roots[f"model/{part}"] = getattr(networks, part)
        report = restore.restore_objects(roots, prefix, needed, what="model config")
        step_key = "step/.ATTRIBUTES/VARIABLE_VALUE"
    else:
        report = restore.restore_by_name(needed, prefix, what="model config")
        step_key = "global_step"
    step = int(reader.get_tensor(step_key)) if step_key in shapes else None
    return Loaded(networks, parts, config, gen_config, prefix, report, step, pconfig)


@dataclasses.dataclass
class LoadedRun:
    """A pretraining run's model restored from its latest checkpoint (`load_run`)."""

    model: ElectraPretrainer
    config: PretrainingConfig
    prefix: str
    vocab_file: str


def run_config(data_dir: str, model_name: str, **overrides) -> PretrainingConfig:
    """The `PretrainingConfig` of a pretraining run (`DATA_DIR/models/MODEL_NAME/config.json`)."""
    model_dir = run_dir.model_dir(data_dir, model_name)
    run = run_dir.RunDirectory(model_dir)
    return pretraining_config_for(
        run.read_config(), name=model_name, data_dir=data_dir, model_dir=model_dir, **overrides
    )


def load_run(config: PretrainingConfig) -> LoadedRun:
    """Rebuilds a pretraining run's model (`run_config`) and restores its latest checkpoint
    completely (every saved model variable must match)."""
    run = run_dir.RunDirectory(config.paths.model_dir)
    vocab_file = config.paths.vocab_file
    if not os.path.exists(vocab_file):
        vocab_file = run.vocab_path
    tokens = vocab.read_vocab(vocab_file)
    model = build_pretrainer(
        config,
        config.model.vocab_size or len(tokens),
        vocab.special_token_ids(tokens, vocab_file),
    )
    latest = locate.latest_checkpoint(run)
    if latest is None:
        raise UserError(f"no checkpoint in {run.path}")
    status = tf.train.Checkpoint(model=model).restore(latest)
    try:
        status.assert_existing_objects_matched()
    except AssertionError as e:
        raise UserError(f"{latest} does not match the run's config.json ({e})") from None
    status.expect_partial()
    return LoadedRun(model, config, latest, vocab_file)
