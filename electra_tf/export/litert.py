"""A LiteRT (TensorFlow Lite) flatbuffer of a pretrained network and its head: `model.tflite`,
ids in (int32 `input_ids`, `input_mask`, `segment_ids` [batch, length], both dynamic), the
`serving_default` signature's outputs (`sequence_output` and the head's logits), TFLite
builtin ops only (no Flex delegate needed), and optionally `model_dynamic_int8.tflite`:
dynamic-range quantization (int8 weights, float32 activations quantized on the fly). A
fine-tuned classifier (one classification task) exports the same way (`export_finetuned_litert`):
ids in; `logits`, `probabilities` and `label_id` out.

Text in does not convert: the in-graph tokenizer's normalisation (`GraphTokenizer`) uses
`UnicodeDecode`/`UnicodeEncode`, which are neither TFLite builtins nor among
tensorflow-text's LiteRT kernels; with SELECT_TF_OPS the file would need the Flex delegate,
which the interpreter of the TensorFlow pip package lacks. Tokenize on the caller's side
(`vocab.txt` is written beside the model).
"""

import os
import tempfile
from typing import Optional

import keras
import tensorflow as tf

from electra_tf.errors import UserError
from electra_tf.export.common import check_export_dir
from electra_tf.export.onnx_graph import write_portable_extras
from electra_tf.export.pretrained import IDS_SIGNATURE, network_and_head
from electra_tf.finetune.classification.head import pool
from electra_tf.modeling.encoder import TransformerEncoder
from electra_tf.modeling.heads import DiscriminatorHead, MaskedLMHead

LITERT_FILE = "model.tflite"
QUANTIZED_FILES = {"dynamic_int8": "model_dynamic_int8.tflite"}
QUANTIZE_CHOICES = ("none", *QUANTIZED_FILES)


class LiteRTModule(tf.Module):
    """The function converted to LiteRT: the encoder and its head on ids (no assertion ops,
    which LiteRT lacks; the caller keeps length <= max_position_embeddings).

    Args:
        encoder: a bidirectional `TransformerEncoder`.
        head: `DiscriminatorHead`, `MaskedLMHead` or None.
    """

    def __init__(self, encoder: TransformerEncoder, head: Optional[keras.layers.Layer]):
        super().__init__(name="electra_litert")
        self.encoder = encoder
        self.head = head
        weights = encoder.weights + (head.weights if head is not None else [])
        self.model_variables = [getattr(w, "value", w) for w in weights]  # tracked tf.Variables

    @tf.function(autograph=False, input_signature=IDS_SIGNATURE)
    def serve(self, input_ids, input_mask, segment_ids):
        seq = self.encoder(input_ids, input_mask, segment_ids, training=False)
        out = {"sequence_output": tf.cast(seq, tf.float32)}
        if isinstance(self.head, DiscriminatorHead):
            logits = self.head(seq)
            out["discriminator_logits"] = logits
            out["discriminator_probabilities"] = tf.sigmoid(logits)
        elif isinstance(self.head, MaskedLMHead):
            out["mlm_logits"] = self.head(seq)
        return out


class FinetunedLiteRTModule(tf.Module):
    """The function converted to LiteRT for a fine-tuned classifier: its encoder and its one
    classification head on ids, as the SavedModel's `serving_default` (`logits`,
    `probabilities`, `label_id`; label strings are in `export_config.json`).

    Args:
        loaded: `export.load_finetuned`'s result with one classification task.
    """

    def __init__(self, loaded):
        super().__init__(name="electra_finetuned_litert")
        kinds = [t.export_kind for t in loaded.tasks]
        if kinds != ["classification"]:
            raise UserError(
                "--format=litert: a fine-tuned model exports to LiteRT with one classification "
                f"task (this one: {', '.join(f'{t.name} ({k})' for t, k in zip(loaded.tasks, kinds))}); "
                "export it as --format=saved_model"
            )
        self.encoder = loaded.model.encoder
        self.head = getattr(loaded.model.task_heads, f"head_{loaded.tasks[0].name}")
        weights = self.encoder.weights + self.head.weights
        self.model_variables = [getattr(w, "value", w) for w in weights]  # tracked tf.Variables

    @tf.function(autograph=False, input_signature=IDS_SIGNATURE)
    def serve(self, input_ids, input_mask, segment_ids):
        seq = self.encoder(input_ids, input_mask, segment_ids, training=False)
        pooled = pool(seq, input_mask, self.head.pooling)
        logits = tf.cast(self.head.dense(pooled), tf.float32)
        return {
            "logits": logits,
            "probabilities": tf.nn.softmax(logits, axis=-1),
            "label_id": tf.argmax(logits, axis=-1, output_type=tf.int32),
        }


def litert_interpreter(path: str, num_threads: Optional[int] = None):
    """A LiteRT interpreter for `path`: ai-edge-litert's where installed, else TensorFlow's
    `tf.lite.Interpreter` (the same kernels)."""
    try:
        from ai_edge_litert.interpreter import Interpreter
    except ImportError:
        Interpreter = tf.lite.Interpreter
    return Interpreter(model_path=path, num_threads=num_threads)


def convert(saved_model_dir: str, quantize: str = "none") -> bytes:
    """The LiteRT flatbuffer of a SavedModel's signatures (builtin ops only)."""
    converter = tf.lite.TFLiteConverter.from_saved_model(saved_model_dir)
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
    if quantize == "dynamic_int8":  # no representative dataset: dynamic-range quantization
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
    return converter.convert()


def export_litert(
    loaded,
    head: str,
    export_dir: str,
    vocab_file: Optional[str],
    do_lower_case: Optional[bool] = None,
    quantize: str = "none",
) -> list[str]:
    """Writes `model.tflite` (and with `quantize="dynamic_int8"` `model_dynamic_int8.tflite`)
    of `head` and its extras (`write_portable_extras`); returns the model files' paths."""
    if quantize not in QUANTIZE_CHOICES:
        raise UserError(f"--quantize={quantize}: choose one of {', '.join(QUANTIZE_CHOICES)}")
    check_export_dir(export_dir)
    encoder, head_layer = network_and_head(loaded, head)
    if not isinstance(encoder, TransformerEncoder) or encoder.causal is not None:
        raise UserError("--format=litert: only a bidirectional TransformerEncoder exports")
    files, paths = _write_files(LiteRTModule(encoder, head_layer), export_dir, quantize)
    info = {"format": "litert", "files": files, "signature": "serving_default"}
    write_portable_extras(export_dir, loaded, encoder, head, vocab_file, do_lower_case, info)
    return paths


def export_finetuned_litert(loaded, export_dir: str, quantize: str = "none") -> list[str]:
    """Writes `model.tflite` (and the quantized file) of a fine-tuned classifier
    (`FinetunedLiteRTModule`), `vocab.txt` and `export_config.json` (its task and labels);
    returns the model files' paths."""
    if quantize not in QUANTIZE_CHOICES:
        raise UserError(f"--quantize={quantize}: choose one of {', '.join(QUANTIZE_CHOICES)}")
    check_export_dir(export_dir)
    module = FinetunedLiteRTModule(loaded)
    files, paths = _write_files(module, export_dir, quantize)
    task = loaded.tasks[0]
    info = {"format": "litert", "files": files, "signature": "serving_default",
            "outputs": ["logits", "probabilities", "label_id"], "task": task.name,
            "labels": task.export_labels()}  # fmt: skip
    write_portable_extras(export_dir, loaded, module.encoder, "classification",
                          loaded.vocab_file, None, info)  # fmt: skip
    return paths


def _write_files(module: tf.Module, export_dir: str, quantize: str):
    """({file name: quantization}, paths): `module.serve` saved as a SavedModel and converted."""
    files = {LITERT_FILE: "none"}
    if quantize != "none":
        files[QUANTIZED_FILES[quantize]] = quantize
    paths = []
    with tempfile.TemporaryDirectory() as tmp:
        tf.saved_model.save(module, tmp, signatures={"serving_default": module.serve})
        os.makedirs(export_dir, exist_ok=True)
        for name, how in files.items():
            path = os.path.join(export_dir, name)
            with open(path, "wb") as f:
                f.write(convert(tmp, how))
            paths.append(path)
    return files, paths
