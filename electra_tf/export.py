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

`load_finetuned` / `export_finetuned_saved_model` do the same for a fine-tuned model
(`run_finetuning.py` with `keep_all_models`): one signature set per task with its outputs
(labels, probabilities, regression values, tags, QA answers; see `export_model.py`).

`export_original_checkpoint` writes the weights under the original's names (`electra/...`,
`generator/...`, `generator_predictions/...`, `discriminator_predictions/...`) as a name-based
checkpoint with `bert_config.json` and `vocab.txt`, which tools made for the released models read.
"""

import dataclasses
import os
import shutil
from typing import Dict, List, Optional

import numpy as np
import tensorflow as tf

from electra_tf import checkpoints, loading, run_dir
from electra_tf.configs import ModelConfig, read_json, write_json
from electra_tf.errors import UserError
from electra_tf.modeling.heads import DiscriminatorHead, MaskedLMHead
from electra_tf.tokenization import GraphTokenizer, load_vocab


def pack_segments(
    a: tf.RaggedTensor, b: Optional[tf.RaggedTensor], n: int, ids: Dict[str, int]
) -> Dict[str, tf.Tensor]:
    """Token ids [batch, (tokens)] -> `[CLS] a [SEP] (b [SEP])` features, int32 [batch, n]: the
    original's truncation (a to n - 2 ids; a pair: pop from the longer, b on ties)."""
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
    return pad_features(input_ids, segment_ids, n, ids["pad"])


def pad_features(
    input_ids: tf.RaggedTensor, segment_ids: tf.RaggedTensor, n: int, pad_id: int
) -> Dict[str, tf.Tensor]:
    """Ragged ids and segments -> `input_ids`, `input_mask`, `segment_ids` int32 [batch, n]."""
    shape = tf.stack([input_ids.nrows(), tf.constant(n, tf.int64)])
    return {
        "input_ids": input_ids.to_tensor(pad_id, shape=shape),
        "input_mask": tf.ones_like(input_ids).to_tensor(0, shape=shape),
        "segment_ids": segment_ids.to_tensor(0, shape=shape),
    }


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
        features = pack_segments(a, b, self.max_seq_length, self.special_ids)
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
    loaded: "loading.Loaded",
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
    special = check_vocab(vocab_file, loaded.config.model_config)
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
    loaded: "loading.Loaded",
    export_dir: str,
    vocab_file: Optional[str] = None,
    name: str = "model.ckpt",
) -> List[str]:
    """Writes every loaded network under the original's variable names (a TF1 name-based
    checkpoint `export_dir/name` with its `checkpoint` file), `bert_config.json` (the
    discriminator's), `generator_config.json` (when there is a separate generator) and
    `vocab.txt`. Returns the names written."""
    check_export_dir(export_dir)
    if vocab_file is not None:
        check_vocab(vocab_file, loaded.config.model_config)
    nets = loaded.networks
    names = checkpoints.write_original_checkpoint(
        nets.weights_of(loaded.parts), os.path.join(export_dir, name), loaded.step or 0
    )
    loaded.config.model_config.to_json_file(os.path.join(export_dir, "bert_config.json"))
    if loaded.generator_config is not None:
        loaded.generator_config.to_json_file(os.path.join(export_dir, "generator_config.json"))
    if vocab_file is not None:
        shutil.copyfile(vocab_file, os.path.join(export_dir, "vocab.txt"))
    return names


# -- fine-tuned models ------------------------------------------------------------------------------


def is_finetuning_config(path: Optional[str]) -> bool:
    """True for the `config.json` that fine-tuning writes beside a kept model (`task_names`)."""
    if path is None or not os.path.exists(path):
        return False
    d = read_json(path)
    return isinstance(d.get("task_names"), list) and isinstance(d.get("model_config"), dict)


@dataclasses.dataclass
class LoadedFinetuned:
    model: object  # electra_tf.finetune.model.FinetuningModel
    tasks: list  # electra_tf.finetune.task.Task, in the model's task order
    config: object  # electra_tf.finetune.config.FinetuningConfig
    model_config: ModelConfig
    prefix: str
    vocab_file: str


def load_finetuned(
    checkpoint: str,
    vocab_file: str,
    model_config: Optional[str] = None,
    data_dir: Optional[str] = None,
) -> LoadedFinetuned:
    """Rebuilds a fine-tuned model as `run_finetuning.py` does (encoder + one head per task from
    the run's `config.json`) and restores it from a `keep_all_models` checkpoint. Tagging tasks
    read their label list from their data files (under `data_dir`, default the run's)."""
    from electra_tf.finetune.config import FinetuningConfig
    from electra_tf.finetune.model import build_model
    from electra_tf.finetune.runner import full_spec
    from electra_tf.finetune.tagging import TaggingTask
    from electra_tf.finetune.tasks import get_tasks

    prefix = run_dir.resolve_checkpoint(checkpoint)
    config_path = model_config or run_dir.find_beside(prefix, (run_dir.CONFIG_FILE,))
    if not is_finetuning_config(config_path):
        raise UserError(f"{config_path or prefix}: not a fine-tuning config.json (no task_names)")
    d = read_json(config_path)
    model_cfg = ModelConfig.from_dict(d["model_config"], source=f"{config_path} model_config")
    hparams = {k: v for k, v in d.items() if k not in ("model_config", "model_name", "data_dir")}
    hparams.update(vocab_file=vocab_file)
    try:
        config = FinetuningConfig(
            d.get("model_name", "model"), data_dir or d.get("data_dir", "."), **hparams
        )
    except TypeError as e:
        raise UserError(f"{config_path}: {e}") from None
    check_vocab(vocab_file, model_cfg)
    tasks = get_tasks(config, None)
    for task in tasks:
        if isinstance(task, TaggingTask):
            files = [os.path.join(config.raw_data_dir(task.name), f"{s}.txt") for s in ("train",)]
            if not any(os.path.exists(f) for f in files):
                raise UserError(
                    f"{files[0]}: tagging task {task.name} reads its tag list from its data "
                    "files (the checkpoint does not store it); pass --data_dir"
                )
    spec = full_spec(tasks, int(config.max_seq_length))
    dummy = {k: tf.zeros((1,) + shape, dtype) for k, (shape, dtype) in spec.items()}
    try:
        model, _ = build_model(model_cfg, [t.make_head() for t in tasks], dummy)
    except (ValueError, tf.errors.InvalidArgumentError) as e:
        raise UserError(f"{config_path}: cannot build the model ({e})") from None
    status = tf.train.Checkpoint(model=model).read(prefix)
    try:
        status.assert_existing_objects_matched()
    except AssertionError as e:
        raise UserError(
            f"{prefix}: the checkpoint does not hold every weight of the model {config_path} "
            f"describes (tasks {', '.join(config.task_names)}; a checkpoint written before task "
            f"heads were saved?): {str(e)[:300]}"
        ) from None
    status.expect_partial()
    return LoadedFinetuned(model, tasks, config, model_cfg, prefix, vocab_file)


def _vocab_tokens(vocab: Dict[str, int]) -> List[str]:
    tokens = [""] * (max(vocab.values()) + 1)
    for token, i in vocab.items():
        tokens[i] = token
    return tokens


def _masked_rows(values: tf.Tensor, lo: tf.Tensor, hi: tf.Tensor) -> tf.RaggedTensor:
    """values[b, lo[b] : hi[b] + 1] for each row, ragged (empty where hi < lo)."""
    pos = tf.range(tf.shape(values)[1])[None, :]
    return tf.ragged.boolean_mask(values, (pos >= lo[:, None]) & (pos <= hi[:, None]))


class FinetunedServingModule(tf.Module):
    """The SavedModel's root for a fine-tuned model: the encoder, the task heads, the in-graph
    tokenizers and one set of signature functions per task (`functions[name]`).

    Args:
        loaded: `load_finetuned`'s result.
        max_seq_length: the text signatures' padding length (tagging, classification) and the QA
            window length.
    """

    def __init__(self, loaded: LoadedFinetuned, max_seq_length: int):
        super().__init__(name="electra_finetuned_serving")
        from electra_tf.finetune.classification import GlueTask
        from electra_tf.finetune.qa import QATask
        from electra_tf.finetune.tagging import TaggingTask

        model = loaded.model
        self.encoder = model.encoder
        self.max_seq_length = int(max_seq_length)
        self.max_positions = model.model_config.max_position_embeddings
        vocab = load_vocab(loaded.vocab_file)
        self.special_ids = dict(check_vocab(loaded.vocab_file, loaded.model_config))
        self.unk_id = vocab.get("[UNK]", 0)
        self.vocab_tokens = tf.constant(_vocab_tokens(vocab))
        lower = bool(loaded.config.do_lower_case)
        self.tokenizers = {}
        self.kinds: Dict[str, str] = {}
        self.function_names: List[str] = []  # `<kind>_<task>`, in task order
        self.function_kinds: List[str] = []
        self.heads = {}
        weights = list(self.encoder.weights)
        for task in loaded.tasks:
            head = getattr(model.task_heads, f"head_{task.name}")
            self.heads[task.name] = head
            weights += [w for w in head.weights if all(w is not o for o in weights)]
            if isinstance(task, QATask):
                self._add_qa(task, head, self._tokenizer(loaded, lower, vocab))
            elif isinstance(task, TaggingTask):
                task_lower = lower or task.force_lower_case
                self._add_tagging(task, head, self._tokenizer(loaded, task_lower, vocab))
            elif isinstance(task, GlueTask):
                self._add_classification(task, head, self._tokenizer(loaded, lower, vocab))
            else:
                raise UserError(f"task {task.name}: export does not support its kind of task")
        self.model_variables = [getattr(w, "value", w) for w in weights]

    def _tokenizer(self, loaded: LoadedFinetuned, lower: bool, vocab) -> GraphTokenizer:
        key = "lower" if lower else "cased"
        if key not in self.tokenizers:
            self.tokenizers[key] = GraphTokenizer(loaded.vocab_file, lower, lower, vocab=vocab)
        return self.tokenizers[key]

    def _encode(self, input_ids, input_mask, segment_ids) -> tf.Tensor:
        tf.debugging.assert_less_equal(
            tf.shape(input_ids)[1],
            self.max_positions,
            message=f"sequence length exceeds max_position_embeddings {self.max_positions}",
        )
        return tf.cast(self.encoder(input_ids, input_mask, segment_ids, training=False), tf.float32)

    # -- classification / regression --------------------------------------------------------------

    def _add_classification(self, task, head, tokenizer: GraphTokenizer) -> None:
        regression = bool(task.is_regression)
        labels = tf.constant(list(task.label_list))
        ids_spec = [
            tf.TensorSpec([None, None], tf.int32, name=k)
            for k in ("input_ids", "input_mask", "segment_ids")
        ]

        def outputs(input_ids, input_mask, segment_ids):
            seq = self._encode(input_ids, input_mask, segment_ids)
            logits = tf.cast(head.dense(seq[:, 0]), tf.float32)
            if regression:
                # as the runner's predictions: back on the data's 0..5 scale
                return {"prediction": tf.squeeze(logits, -1) * 5.0}
            label_id = tf.argmax(logits, axis=-1, output_type=tf.int32)
            return {
                "logits": logits,
                "probabilities": tf.nn.softmax(logits, axis=-1),
                "label_id": label_id,
                "label": tf.gather(labels, label_id),
            }

        def text(text):
            f = pack_segments(tokenizer.tokenize(text), None, self.max_seq_length, self.special_ids)
            return {**f, **outputs(**f)}

        def text_pair(text_a, text_b):
            a, b = tokenizer.tokenize(text_a), tokenizer.tokenize(text_b)
            f = pack_segments(a, b, self.max_seq_length, self.special_ids)
            return {**f, **outputs(**f)}

        self.kinds[task.name] = "regression" if regression else "classification"
        self._register(task.name, "serve", outputs, ids_spec)
        self._register(task.name, "serve_text", text, [tf.TensorSpec([None], tf.string, "text")])
        self._register(
            task.name,
            "serve_text_pair",
            text_pair,
            [
                tf.TensorSpec([None], tf.string, "text_a"),
                tf.TensorSpec([None], tf.string, "text_b"),
            ],
        )

    # -- tagging ----------------------------------------------------------------------------------

    def _add_tagging(self, task, head, tokenizer: GraphTokenizer) -> None:
        tags = tf.constant(list(task.label_list))
        n = self.max_seq_length
        ids_spec = [
            tf.TensorSpec([None, None], tf.int32, name=k)
            for k in ("input_ids", "input_mask", "segment_ids")
        ]

        def outputs(input_ids, input_mask, segment_ids):
            seq = self._encode(input_ids, input_mask, segment_ids)
            logits = tf.cast(head.dense(seq), tf.float32)  # every position
            tag_ids = tf.argmax(logits, axis=-1, output_type=tf.int32)
            return {"tag_logits": logits, "tag_ids": tag_ids, "tags": tf.gather(tags, tag_ids)}

        def text(text):
            # CoNLL words: whitespace-separated; each word is labelled on its first sub-token
            words = tf.strings.split(text)
            pieces = tokenizer.tokenize(words.flat_values)
            unk = tf.fill([pieces.nrows(), 1], tf.constant(self.unk_id, tf.int32))
            empty = tf.equal(pieces.row_lengths(), 0)[:, None]  # such a word becomes [UNK]
            pieces = tf.concat([pieces, tf.ragged.boolean_mask(unk, empty)], axis=1)
            lengths = words.with_flat_values(tf.cast(pieces.row_lengths(), tf.int32))
            # sub-tokens up to and including each word
            ends = tf.RaggedTensor.from_tensor(
                tf.math.cumsum(lengths.to_tensor(0), axis=1), lengths=lengths.row_lengths()
            )
            keep = ends + 2 <= n  # [CLS] ... [SEP]: the runner keeps a word only if it all fits
            words = tf.ragged.boolean_mask(words, keep)
            positions = tf.ragged.boolean_mask(ends - lengths + 1, keep)
            kept = words.with_flat_values(
                tf.ragged.boolean_mask(pieces, keep.flat_values)
            ).merge_dims(1, 2)
            rows = kept.nrows()
            cls = tf.fill([rows, 1], tf.constant(self.special_ids["cls"], tf.int32))
            sep = tf.fill([rows, 1], tf.constant(self.special_ids["sep"], tf.int32))
            cls, sep = tf.RaggedTensor.from_tensor(cls), tf.RaggedTensor.from_tensor(sep)
            input_ids = tf.concat([cls, kept, sep], axis=1)
            f = pad_features(input_ids, tf.ones_like(input_ids), n, self.special_ids["pad"])
            seq = self._encode(**f)
            width = tf.cast(
                tf.reduce_max(tf.concat([words.row_lengths(), tf.zeros([1], tf.int64)], 0)),
                tf.int64,
            )
            shape = tf.stack([rows, width])
            pos = positions.to_tensor(0, shape=shape)
            logits = tf.cast(head.dense(tf.gather(seq, pos, batch_dims=1)), tf.float32)
            tag_ids = tf.argmax(logits, axis=-1, output_type=tf.int32)
            valid = tf.ones_like(positions, tf.bool).to_tensor(False, shape=shape)
            return {
                **f,
                "words": words.to_tensor("", shape=shape),
                "num_words": tf.cast(words.row_lengths(), tf.int32),
                "tag_logits": logits,
                "tag_ids": tf.where(valid, tag_ids, -1),
                "tags": tf.where(valid, tf.gather(tags, tag_ids), ""),
            }

        self.kinds[task.name] = "tagging"
        self._register(task.name, "serve", outputs, ids_spec)
        self._register(task.name, "serve_text", text, [tf.TensorSpec([None], tf.string, "text")])

    # -- question answering -----------------------------------------------------------------------

    def _add_qa(self, task, head, tokenizer: GraphTokenizer) -> None:
        cfg = task.config
        n = self.max_seq_length
        max_query = int(cfg.max_query_length)
        max_answer = int(cfg.max_answer_length)
        threshold = float(cfg.qa_na_threshold)
        v2 = bool(task.v2)
        classifier = bool(head.answerable_classifier)
        if n - max_query - 3 < 1:
            raise UserError(
                f"max_seq_length {n} leaves no room for the context after max_query_length "
                f"{max_query}"
            )
        if head.beam_size > n:
            raise UserError(f"beam_size {head.beam_size} exceeds max_seq_length {n}")
        ids_spec = [
            tf.TensorSpec([None, None], tf.int32, name=k)
            for k in ("input_ids", "input_mask", "segment_ids")
        ]
        keys = ("start_top_log_probs", "start_top_index", "end_top_log_probs", "end_top_index")

        def outputs(input_ids, input_mask, segment_ids):
            seq = self._encode(input_ids, input_mask, segment_ids)
            out = head.predict_spans(seq, input_mask, segment_ids, training=False)
            res = {k: out[k] for k in keys + ("start_logits", "answerable_logit")}
            return res

        def qa(question, context):
            q = tokenizer.tokenize(question)[:, :max_query]
            words = tf.strings.split(context)  # the original's doc tokens (whitespace words)
            inner = tokenizer.tokenize(words.flat_values)  # [words, (sub-tokens)]
            doc = words.with_flat_values(inner).merge_dims(1, 2)
            # the (batch-global) word index of each sub-token
            word_of = doc.with_flat_values(tf.cast(inner.value_rowids(), tf.int32))
            budget = n - 3 - q.row_lengths()
            keep = tf.ragged.range(doc.row_lengths()) < budget[:, None]
            doc = tf.ragged.boolean_mask(doc, keep)
            word_of = tf.ragged.boolean_mask(word_of, keep)
            rows = q.nrows()
            cls = tf.RaggedTensor.from_tensor(
                tf.fill([rows, 1], tf.constant(self.special_ids["cls"], tf.int32))
            )
            sep = tf.RaggedTensor.from_tensor(
                tf.fill([rows, 1], tf.constant(self.special_ids["sep"], tf.int32))
            )
            parts, segments = [cls, q, sep, doc, sep], [0, 0, 0, 1, 1]
            input_ids = tf.concat(parts, axis=1)
            segment_ids = tf.concat([tf.ones_like(p) * s for p, s in zip(parts, segments)], 1)
            f = pad_features(input_ids, segment_ids, n, self.special_ids["pad"])
            seq = self._encode(**f)
            out = head.predict_spans(seq, f["input_mask"], f["segment_ids"], training=False)
            # candidates (i, j) of the beam: inside the context, end >= start, length <= max
            first = tf.cast(q.row_lengths(), tf.int32) + 2  # the first context position
            last = first + tf.cast(doc.row_lengths(), tf.int32) - 1
            start = out["start_top_index"][:, :, None]  # [B, K, 1]
            end = out["end_top_index"]  # [B, K, K]
            lo, hi = first[:, None, None], last[:, None, None]
            ok = (start >= lo) & (start <= hi) & (end >= start) & (end <= hi)
            ok &= end - start + 1 <= max_answer
            scores = out["start_top_log_probs"][:, :, None] + out["end_top_log_probs"]
            scores = tf.reshape(tf.where(ok, scores, -np.inf), [rows, -1])
            best = tf.argmax(scores, axis=-1, output_type=tf.int32)
            score = tf.gather(scores, best, batch_dims=1)
            found = tf.math.is_finite(score)
            k = tf.shape(end)[1]
            best_start = tf.gather(out["start_top_index"], best // k, batch_dims=1)
            best_end = tf.gather(tf.reshape(end, [rows, -1]), best, batch_dims=1)
            best_start = tf.where(found, best_start, 1)
            best_end = tf.where(found, best_end, 0)  # empty span
            span = _masked_rows(f["input_ids"], best_start, best_end)
            tokens = tf.ragged.map_flat_values(tf.gather, self.vocab_tokens, span)
            # as the offline decoder's tok_text: join, glue "##" pieces
            answer = tf.strings.reduce_join(tokens, axis=-1, separator=" ")
            answer = tf.strings.regex_replace(answer, " ##", "")
            answer = tf.strings.strip(tf.strings.regex_replace(answer, "##", ""))
            # the whole context words the span lies in (original case and punctuation)
            word_of = word_of.to_tensor(0, shape=tf.stack([rows, tf.constant(n, tf.int64)]))
            w0 = tf.gather(word_of, tf.maximum(best_start - first, 0), batch_dims=1)
            w1 = tf.gather(word_of, tf.maximum(best_end - first, 0), batch_dims=1)
            w0 = tf.where(found, w0 - tf.cast(words.row_starts(), tf.int32), 1)
            w1 = tf.where(found, w1 - tf.cast(words.row_starts(), tf.int32), 0)
            word_span = tf.ragged.boolean_mask(
                words,
                (tf.ragged.range(words.row_lengths()) >= tf.cast(w0, tf.int64)[:, None])
                & (tf.ragged.range(words.row_lengths()) <= tf.cast(w1, tf.int64)[:, None]),
            )
            if classifier:
                null_score = out["answerable_logit"]
            else:  # as the offline decoder without the classifier
                null_score = out["start_logits"][:, 0] + out["end_logits"][:, 0] - score
            has_answer = found & (null_score <= threshold) if v2 else found
            return {
                "answer": answer,
                "answer_words": tf.strings.reduce_join(word_span, axis=-1, separator=" "),
                "score": score,
                "null_score": null_score,
                "has_answer": has_answer,
                "start_position": tf.where(found, best_start, -1),
                "end_position": tf.where(found, best_end, -1),
                **f,
            }

        self.kinds[task.name] = "qa"
        self._register(task.name, "serve", outputs, ids_spec)
        self._register(
            task.name,
            "serve_qa",
            qa,
            [
                tf.TensorSpec([None], tf.string, "question"),
                tf.TensorSpec([None], tf.string, "context"),
            ],
        )

    def _register(self, task_name: str, kind: str, fn, spec) -> None:
        name = f"{kind}_{task_name}"
        setattr(self, name, tf.function(fn, input_signature=spec, autograph=False))
        self.function_names.append(name)
        self.function_kinds.append(kind)


def finetuned_signature_names(module: FinetunedServingModule) -> Dict[str, str]:
    """Signature key -> function name: every `<kind>_<task>`, and each kind also without the
    suffix for the first task that has it (the first task's `serve_<task>` as `serving_default`)."""
    names = {name: name for name in module.function_names}
    for name, kind in zip(module.function_names, module.function_kinds):  # in task order
        names.setdefault("serving_default" if kind == "serve" else kind, name)
    return names


def export_finetuned_saved_model(
    loaded: LoadedFinetuned, export_dir: str, max_seq_length: Optional[int] = None
) -> FinetunedServingModule:
    """Writes the SavedModel of a fine-tuned model (see `export_model.py` for the signatures)."""
    check_export_dir(export_dir)
    n = int(max_seq_length or loaded.config.max_seq_length)
    limit = loaded.model_config.max_position_embeddings
    if n < 3 or n > limit:
        raise UserError(f"max_seq_length {n} is not in [3, max_position_embeddings {limit}]")
    module = FinetunedServingModule(loaded, n)
    names = finetuned_signature_names(module)
    signatures = {key: getattr(module, fn) for key, fn in names.items()}
    tf.saved_model.save(module, export_dir, signatures=signatures)
    info = {
        "tasks": {t.name: module.kinds[t.name] for t in loaded.tasks},
        "label_lists": {
            t.name: list(t.label_list)
            for t in loaded.tasks
            if module.kinds[t.name] in ("classification", "tagging")
        },
        "signatures": sorted(signatures),
        "max_seq_length": n,
        "do_lower_case": bool(loaded.config.do_lower_case),
    }
    write_json(os.path.join(export_dir, "assets.extra", "export_config.json"), info)
    write_json(
        os.path.join(export_dir, "assets.extra", "model_config.json"),
        loaded.model_config.to_dict(),
    )
    return module
