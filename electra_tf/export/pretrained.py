"""The SavedModel of a pretrained network and its head, whose signatures need only `tensorflow`
and `tensorflow_text` in the loading process:

- `serving_default(input_ids, input_mask, segment_ids)` (int32 [batch, length], length at most
  max_position_embeddings) -> `sequence_output` [batch, length, hidden] and, per head,
  `discriminator_logits`/`discriminator_probabilities` [batch, length] or `mlm_logits`
  [batch, length, vocab] (the generator head at every position);
- `serve_text(text)` and `serve_text_pair(text_a, text_b)` ([batch] strings): BERT tokenization
  in the graph with the vocab stored as an asset, `[CLS] a [SEP] (b [SEP])` (`electra_tf.packing`:
  truncated, the longer segment first, as the original, and padded to `max_seq_length`): the
  same outputs, computed on the batch's longest sequence only (zeros past it), plus `input_ids`,
  `input_mask`, `segment_ids`. Every signature runs `inference.InferenceEncoder`, the encoder's
  function in fewer ops. Without a vocab (a Hugging Face
  directory saved without its tokenizer) only `serving_default` is written.
"""

from typing import Optional

import keras
import tensorflow as tf

from electra_tf import packing
from electra_tf.checkpoint import load_model
from electra_tf.errors import UserError
from electra_tf.export.common import check_export_dir, check_vocab, write_extra
from electra_tf.export.inference import (
    InferenceEncoder,
    head_outputs,
    pad_positions,
    resolve_precision,
    serving_choices,
    serving_variables,
)
from electra_tf.modeling.encoder import TransformerEncoder
from electra_tf.tokenization import GraphTokenizer

# the ids signature (`serving_default`) of every exported encoder: a batch of any size and length
IDS_SIGNATURE = [
    tf.TensorSpec([None, None], tf.int32, name="input_ids"),
    tf.TensorSpec([None, None], tf.int32, name="input_mask"),
    tf.TensorSpec([None, None], tf.int32, name="segment_ids"),
]


class ServingModule(tf.Module):
    """The SavedModel's root: one encoder, its head, the in-graph tokenizer.

    Args:
        encoder: the `TransformerEncoder` to serve.
        head: `DiscriminatorHead`, `MaskedLMHead` or None (sequence output only).
        tokenizer: a `GraphTokenizer` (its vocab is saved as an asset).
        max_seq_length: the text signatures' truncation and padding length.
        special_ids: "cls", "sep" and "pad" token ids.
        precision: the encoder's dense matmuls (`inference.PRECISIONS`).
    """

    def __init__(
        self,
        encoder: TransformerEncoder,
        head: Optional[keras.layers.Layer],
        tokenizer: Optional[GraphTokenizer],
        max_seq_length: int,
        special_ids: dict[str, int],
        precision: str = "float32",
    ):
        super().__init__(name="electra_serving")
        self.encoder = encoder
        self.head = head
        self.tokenizer = tokenizer
        self.max_seq_length = max_seq_length
        self.special_ids = dict(special_ids)
        self.max_positions = encoder.config.max_position_embeddings
        self.inference = InferenceEncoder(encoder, precision)
        # the underlying tf.Variables the serving graph reads, tracked for the SavedModel
        weights = encoder.weights + (head.weights if head is not None else [])
        self.model_variables = serving_variables(encoder, weights)

    def _outputs(self, input_ids, input_mask, segment_ids) -> dict[str, tf.Tensor]:
        tf.debugging.assert_less_equal(
            tf.shape(input_ids)[1],
            self.max_positions,
            message=f"sequence length exceeds max_position_embeddings {self.max_positions}",
        )
        seq = self.inference(input_ids, input_mask, segment_ids)
        return {"sequence_output": seq, **head_outputs(self.head, seq)}

    @tf.function(autograph=False, input_signature=IDS_SIGNATURE)
    def serve(self, input_ids, input_mask, segment_ids):
        return self._outputs(input_ids, input_mask, segment_ids)

    def _pack(self, a: tf.RaggedTensor, b: Optional[tf.RaggedTensor]) -> dict[str, tf.Tensor]:
        features = packing.pack_and_pad_ragged(a, b, self.max_seq_length, self.special_ids)
        out = self._outputs(**packing.trim_to_longest(features))
        length = tf.shape(features["input_ids"])[1]
        return {**features, **{k: pad_positions(v, length) for k, v in out.items()}}

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


class IdsServingModule(ServingModule):
    """A `ServingModule` without a tokenizer: `serve` (token ids) only."""

    serve_text = None  # hides the text functions: nothing to trace them with
    serve_text_pair = None

    def __init__(
        self,
        encoder: TransformerEncoder,
        head: Optional[keras.layers.Layer],
        precision: str = "float32",
    ):
        super().__init__(encoder, head, None, 0, {}, precision)


def network_and_head(
    loaded: load_model.Loaded, head: str
) -> tuple[TransformerEncoder, Optional[keras.layers.Layer]]:
    """The encoder and head layer that `head` (discriminator | generator | encoder) serves."""
    nets = loaded.networks
    encoder = nets.generator if head == "generator" else nets.discriminator
    layer = {
        "discriminator": nets.discriminator_predictions,
        "generator": nets.generator_predictions,
        "encoder": None,
    }[head]
    return encoder, layer


def export_saved_model(
    loaded: load_model.Loaded,
    head: str,
    export_dir: str,
    vocab_file: Optional[str],
    max_seq_length: Optional[int] = None,
    do_lower_case: Optional[bool] = None,
    precision: str = "float32",
) -> ServingModule:
    """Writes the SavedModel for `head` (discriminator | generator | encoder); `max_seq_length`
    None: 128, or max_position_embeddings where that is smaller. `vocab_file` None: the ids
    signature only. `precision`: the encoder's dense matmuls (`inference.PRECISIONS`, or "auto":
    the faster on this CPU, measured, `inference.choose_precision`)."""
    check_export_dir(export_dir)
    encoder, head_layer = network_and_head(loaded, head)
    if max_seq_length is None:
        max_seq_length = min(128, encoder.config.max_position_embeddings)
    if max_seq_length < 3 or max_seq_length > encoder.config.max_position_embeddings:
        raise UserError(
            f"max_seq_length {max_seq_length} is not in [3, max_position_embeddings "
            f"{encoder.config.max_position_embeddings}]"
        )
    precision, measured = resolve_precision(precision, encoder, max_seq_length)
    if vocab_file is None:
        module = IdsServingModule(encoder, head_layer, precision)
        tf.saved_model.save(module, export_dir, signatures={"serving_default": module.serve})
        info = {
            "head": head,
            "text_signatures": False,
            "serving": serving_choices(None, precision, measured),
        }
        write_extra(export_dir, info, encoder.config)
        return module
    special = check_vocab(vocab_file, loaded.config.model_config)
    lower = loaded.config.do_lower_case if do_lower_case is None else do_lower_case
    module = ServingModule(
        encoder, head_layer, GraphTokenizer(vocab_file, lower), max_seq_length, special, precision
    )
    signatures = {
        "serving_default": module.serve,
        "serve_text": module.serve_text,
        "serve_text_pair": module.serve_text_pair,
    }
    tf.saved_model.save(module, export_dir, signatures=signatures)
    info = {
        "head": head,
        "max_seq_length": max_seq_length,
        "do_lower_case": lower,
        "serving": serving_choices(precision=precision, measured=measured),
    }
    write_extra(export_dir, info, encoder.config)
    return module
