"""Export: SavedModels with serving signatures, and checkpoints in the original's TF1 layout.

* `pretrained`: a pretrained network and its head (`ServingModule`, `export_saved_model`),
  rebuilt by `electra_tf.checkpoint.load_model.load_networks`;
* `finetuned`: a kept fine-tuned model (`load_finetuned`, `export_finetuned_saved_model`), each
  task's signatures given by its kind (`electra_tf.finetune.*/serving.py`);
* `original`: `export_original_checkpoint`, the weights under the original's names
  (`electra/...`, `generator/...`, `generator_predictions/...`, `discriminator_predictions/...`)
  with `bert_config.json` and `vocab.txt`, which tools made for the released models read;
* `huggingface`: `export_huggingface`, one network and its head in `save_pretrained`'s layout
  (config.json, model.safetensors, tokenizer files), which `transformers` loads;
* `keras_hub`: `export_keras_hub`, the encoder as a keras-hub ElectraBackbone preset
  (config.json, model.weights.h5, tokenizer files), which `keras_hub` loads;
* `onnx_graph`: `export_onnx`, `model.onnx` written op by op with `onnx.helper` (ids in), which
  `onnxruntime` runs;
* `litert`: `export_litert`, `model.tflite` (and a dynamic-range int8 variant), ids in;
  `export_finetuned_litert` for a fine-tuned classifier.
"""

from electra_tf.export.common import check_export_dir, check_vocab
from electra_tf.export.finetuned import (
    FinetunedServingModule,
    LoadedFinetuned,
    export_finetuned_saved_model,
    finetuned_signature_names,
    is_finetuning_config,
    load_finetuned,
)
from electra_tf.export.huggingface import export_huggingface
from electra_tf.export.keras_hub import export_keras_hub
from electra_tf.export.litert import export_finetuned_litert, export_litert, litert_interpreter
from electra_tf.export.onnx_graph import export_onnx
from electra_tf.export.original import export_original_checkpoint
from electra_tf.export.pretrained import ServingModule, export_saved_model

__all__ = [
    "FinetunedServingModule",
    "LoadedFinetuned",
    "ServingModule",
    "check_export_dir",
    "check_vocab",
    "export_finetuned_saved_model",
    "export_huggingface",
    "export_keras_hub",
    "export_finetuned_litert",
    "export_litert",
    "export_onnx",
    "export_original_checkpoint",
    "export_saved_model",
    "finetuned_signature_names",
    "is_finetuning_config",
    "litert_interpreter",
    "load_finetuned",
]
