"""Export: SavedModels with serving signatures, and checkpoints in the original's TF1 layout.

`load_networks` rebuilds the pretraining networks (discriminator and generator encoders and their
heads) from a checkpoint of this project or an original google-research one, and checks the
checkpoint against the model config. `export_saved_model` writes a SavedModel whose signatures
need only `tensorflow` and `tensorflow_text` in the loading process:

- `serving_default(input_ids, input_mask, segment_ids)` (int32 [batch, length], length at most
  max_position_embeddings) -> `sequence_output` [batch, length, hidden] and, per head,
  `discriminator_logits`/`discriminator_probabilities` [batch, length] or `mlm_logits`
  [batch, length, vocab] (the generator head at every position);
- `serve_text(text)` and `serve_text_pair(text_a, text_b)` ([batch] strings): BERT tokenization
  in the graph with the vocab stored as an asset, `[CLS] a [SEP] (b [SEP])`, truncated (the longer
  segment first, as the original) and padded to `max_seq_length`; the same outputs plus
  `input_ids`, `input_mask`, `segment_ids`.

`export_original_checkpoint` writes the weights under the original's names (`electra/...`,
`generator/...`, `generator_predictions/...`, `discriminator_predictions/...`) as a name-based
checkpoint with `bert_config.json` and `vocab.txt`, which tools made for the released models read.
"""

import dataclasses
import os
import re
import shutil
from typing import Dict, List, Optional, Sequence, Tuple

import tensorflow as tf

from electra_tf import checkpoints
from electra_tf.configs import ModelConfig, read_json, write_json
from electra_tf.errors import UserError
from electra_tf.modeling.encoder import TransformerEncoder
from electra_tf.modeling.heads import DiscriminatorHead, MaskedLMHead
from electra_tf.tokenization import GraphTokenizer, load_vocab

HEADS = ("discriminator", "generator", "encoder")
PARTS = ("discriminator", "generator", "generator_predictions", "discriminator_predictions")
HEAD_PARTS = {
    "discriminator": ("discriminator", "discriminator_predictions"),
    "generator": ("generator", "generator_predictions"),
    "encoder": ("discriminator",),
}
CONFIG_NAMES = ("config.json", "bert_config.json")


@dataclasses.dataclass
class ExportConfig:
    """What export needs from a config file: a BERT JSON, or a run's config.json."""

    path: str
    model: ModelConfig
    generator: Optional[ModelConfig] = None
    do_lower_case: bool = True


def read_config(path: str) -> ExportConfig:
    d = read_json(path)
    if isinstance(d.get("model_config"), dict):  # a run's config.json
        gen = d.get("generator_config")
        return ExportConfig(
            path,
            ModelConfig.from_dict(d["model_config"], source=f"{path} model_config"),
            ModelConfig.from_dict(gen, source=f"{path} generator_config") if gen else None,
            bool(d.get("do_lower_case", True)),
        )
    return ExportConfig(path, ModelConfig.from_dict(d, source=path))


def find_beside(prefix: str, names: Sequence[str]) -> Optional[str]:
    """The first of `names` in the checkpoint's directory or the one above it."""
    directory = os.path.dirname(os.path.abspath(prefix))
    for d in (directory, os.path.dirname(directory)):
        for name in names:
            if os.path.exists(os.path.join(d, name)):
                return os.path.join(d, name)
    return None


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
    config: ExportConfig
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
    prefix = checkpoints.resolve_checkpoint(checkpoint)
    config_path = model_config or find_beside(prefix, CONFIG_NAMES)
    if config_path is None:
        raise UserError(f"{prefix}: no config.json beside the checkpoint; pass --model_config")
    config = read_config(config_path)
    object_based = checkpoints.is_object_based(prefix)
    reader = tf.train.load_checkpoint(prefix)
    shapes = reader.get_variable_to_shape_map()
    has, untied, emb_key = _contents(prefix)
    if emb_key is None:
        raise UserError(f"{prefix}: the checkpoint holds no discriminator embeddings")
    rows = shapes[emb_key][0]
    if rows != config.model.vocab_size:
        raise UserError(
            f"{config_path}: vocab_size {config.model.vocab_size} does not match the checkpoint "
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
        gen_config = config.generator
        if gen_config is None and not object_based:
            gen_config = infer_generator_config(config.model, shapes)
        if gen_config is None:
            raise UserError(
                f"{config_path}: no generator_config; pass the run's config.json as --model_config"
            )
    networks = build_networks(config.model, gen_config, parts, untied)
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


class ServingModule(tf.Module):
    """The SavedModel's root: one encoder, its head, the in-graph tokenizer.

    Args:
        encoder: the `TransformerEncoder` to serve.
        head: `DiscriminatorHead`, `MaskedLMHead` or None (sequence output only).
        tokenizer: a `GraphTokenizer` (its vocab is saved as an asset).
        max_seq_length: the text signatures' truncation and padding length.
        special_ids: "cls", "sep" and "pad" token ids.
    """

    def __init__(self, encoder, head, tokenizer: GraphTokenizer, max_seq_length: int, special_ids):
        super().__init__(name="electra_serving")
        self.encoder = encoder
        self.head = head
        self.tokenizer = tokenizer
        self.max_seq_length = max_seq_length
        self.special_ids = dict(special_ids)
        self.max_positions = encoder.config.max_position_embeddings
        # the underlying tf.Variables, tracked for the SavedModel
        weights = encoder.weights + (head.weights if head is not None else [])
        self.model_variables = [getattr(w, "value", w) for w in weights]

    def _outputs(self, input_ids, input_mask, segment_ids) -> Dict[str, tf.Tensor]:
        tf.debugging.assert_less_equal(
            tf.shape(input_ids)[1],
            self.max_positions,
            message=f"sequence length exceeds max_position_embeddings {self.max_positions}",
        )
        seq = self.encoder(input_ids, input_mask, segment_ids, training=False)
        out = {"sequence_output": tf.cast(seq, tf.float32)}
        if isinstance(self.head, DiscriminatorHead):
            logits = self.head(seq)
            out["discriminator_logits"] = logits
            out["discriminator_probabilities"] = tf.sigmoid(logits)
        elif isinstance(self.head, MaskedLMHead):
            out["mlm_logits"] = self.head(seq)
        return out

    @tf.function(
        autograph=False,
        input_signature=[
            tf.TensorSpec([None, None], tf.int32, name="input_ids"),
            tf.TensorSpec([None, None], tf.int32, name="input_mask"),
            tf.TensorSpec([None, None], tf.int32, name="segment_ids"),
        ],
    )
    def serve(self, input_ids, input_mask, segment_ids):
        return self._outputs(input_ids, input_mask, segment_ids)

    def _pack(self, a: tf.RaggedTensor, b: Optional[tf.RaggedTensor]) -> Dict[str, tf.Tensor]:
        n = self.max_seq_length
        ids = self.special_ids
        rows = a.nrows()
        cls = tf.RaggedTensor.from_tensor(tf.fill([rows, 1], tf.constant(ids["cls"], tf.int32)))
        sep = tf.RaggedTensor.from_tensor(tf.fill([rows, 1], tf.constant(ids["sep"], tf.int32)))
        if b is None:
            a = a[:, : n - 2]
            parts, segments = [cls, a, sep], [0, 0, 0]
        else:
            # the original's truncate_seq_pair: pop from the longer (b on ties) until it fits
            budget = tf.constant(n - 3, tf.int64)
            la, lb = a.row_lengths(), b.row_lengths()
            over = la + lb > budget
            keep_a = tf.where(over, tf.minimum(la, tf.maximum(budget - lb, (budget + 1) // 2)), la)
            keep_b = tf.where(over, tf.minimum(lb, budget - keep_a), lb)
            a = tf.ragged.boolean_mask(a, tf.ragged.range(la) < keep_a[:, None])
            b = tf.ragged.boolean_mask(b, tf.ragged.range(lb) < keep_b[:, None])
            parts, segments = [cls, a, sep, b, sep], [0, 0, 0, 1, 1]
        input_ids = tf.concat(parts, axis=1)
        segment_ids = tf.concat([tf.ones_like(p) * s for p, s in zip(parts, segments)], axis=1)
        shape = tf.stack([rows, tf.constant(n, tf.int64)])
        features = {
            "input_ids": input_ids.to_tensor(ids["pad"], shape=shape),
            "input_mask": tf.ones_like(input_ids).to_tensor(0, shape=shape),
            "segment_ids": segment_ids.to_tensor(0, shape=shape),
        }
        return {**features, **self._outputs(**features)}

    @tf.function(autograph=False, input_signature=[tf.TensorSpec([None], tf.string, name="text")])
    def serve_text(self, text):
        return self._pack(self.tokenizer.tokenize(text), None)

    @tf.function(
        autograph=False,
        input_signature=[
            tf.TensorSpec([None], tf.string, name="text_a"),
            tf.TensorSpec([None], tf.string, name="text_b"),
        ],
    )
    def serve_text_pair(self, text_a, text_b):
        return self._pack(self.tokenizer.tokenize(text_a), self.tokenizer.tokenize(text_b))


def check_export_dir(export_dir: str) -> None:
    if os.path.isdir(export_dir) and os.listdir(export_dir):
        raise UserError(f"{export_dir}: the export directory is not empty; choose a new one")
    if os.path.exists(export_dir) and not os.path.isdir(export_dir):
        raise UserError(f"{export_dir}: exists and is not a directory")


def check_vocab(vocab_file: str, config: ModelConfig) -> Dict[str, int]:
    if not os.path.exists(vocab_file):
        raise UserError(f"{vocab_file}: no such vocab file")
    vocab = load_vocab(vocab_file)
    if len(vocab) > config.vocab_size:
        raise UserError(
            f"{vocab_file}: {len(vocab)} entries, more than the model's vocab_size "
            f"{config.vocab_size}"
        )
    special = {}
    for key, token in (("cls", "[CLS]"), ("sep", "[SEP]"), ("pad", "[PAD]")):
        if token not in vocab:
            raise UserError(f"{vocab_file}: the vocab has no {token} token")
        special[key] = vocab[token]
    return special


def export_saved_model(
    loaded: Loaded,
    head: str,
    export_dir: str,
    vocab_file: str,
    max_seq_length: int = 128,
    do_lower_case: Optional[bool] = None,
) -> ServingModule:
    """Writes the SavedModel for `head` (discriminator | generator | encoder)."""
    check_export_dir(export_dir)
    nets = loaded.networks
    encoder = nets.generator if head == "generator" else nets.discriminator
    if max_seq_length < 3 or max_seq_length > encoder.config.max_position_embeddings:
        raise UserError(
            f"max_seq_length {max_seq_length} is not in [3, max_position_embeddings "
            f"{encoder.config.max_position_embeddings}]"
        )
    special = check_vocab(vocab_file, loaded.config.model)
    lower = loaded.config.do_lower_case if do_lower_case is None else do_lower_case
    head_layer = {
        "discriminator": nets.discriminator_predictions,
        "generator": nets.generator_predictions,
        "encoder": None,
    }[head]
    module = ServingModule(
        encoder, head_layer, GraphTokenizer(vocab_file, lower), max_seq_length, special
    )
    signatures = {
        "serving_default": module.serve,
        "serve_text": module.serve_text,
        "serve_text_pair": module.serve_text_pair,
    }
    tf.saved_model.save(module, export_dir, signatures=signatures)
    model_config = encoder.config.to_dict()
    info = {"head": head, "max_seq_length": max_seq_length, "do_lower_case": lower}
    write_json(os.path.join(export_dir, "assets.extra", "export_config.json"), info)
    write_json(os.path.join(export_dir, "assets.extra", "model_config.json"), model_config)
    return module


def export_original_checkpoint(
    loaded: Loaded, export_dir: str, vocab_file: Optional[str] = None, name: str = "model.ckpt"
) -> List[str]:
    """Writes every loaded network under the original's variable names (a TF1 name-based
    checkpoint `export_dir/name` with its `checkpoint` file), `bert_config.json` (the
    discriminator's), `generator_config.json` (when there is a separate generator) and
    `vocab.txt`. Returns the names written."""
    check_export_dir(export_dir)
    if vocab_file is not None:
        check_vocab(vocab_file, loaded.config.model)
    nets = loaded.networks
    names = checkpoints.write_original_checkpoint(
        nets.weights_of(loaded.parts), os.path.join(export_dir, name), loaded.step or 0
    )
    loaded.config.model.to_json_file(os.path.join(export_dir, "bert_config.json"))
    if loaded.generator_config is not None:
        loaded.generator_config.to_json_file(os.path.join(export_dir, "generator_config.json"))
    if vocab_file is not None:
        shutil.copyfile(vocab_file, os.path.join(export_dir, "vocab.txt"))
    return names
