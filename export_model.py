"""Exports a checkpoint (this project's, an original google-research TF1 one or a Hugging Face
directory, detected automatically) as a SavedModel with serving signatures, in the original's
checkpoint layout, in the Hugging Face layout, or as a keras-hub preset.

    python export_model.py --checkpoint=DATA_DIR/models/NAME --export_dir=OUT \\
        [--head=discriminator|generator|encoder] \\
        [--format=saved_model|original_checkpoint|huggingface|keras_hub|onnx|litert] \\
        [--model_config=CONFIG.json] [--vocab_file=vocab.txt] [--max_seq_length=128] \\
        [--serving_precision=float32|bfloat16|auto]

The model config defaults to the `config.json` (or `bert_config.json`) beside the checkpoint and
the vocab to the `vocab.txt` beside it. `--checkpoint` may be a Hugging Face directory
(`save_pretrained`'s: config.json with model_type "electra", model.safetensors; an
ElectraForPreTraining, ElectraForMaskedLM or ElectraModel) or two joined by a comma,
`DISC_DIR,GEN_DIR` (both networks); its own config.json is the model config and its
tokenizer_config.json gives do_lower_case. It may also be a keras-hub ElectraBackbone preset
(`save_to_preset`'s: config.json, model.weights.h5, tokenizer.json,
assets/tokenizer/vocabulary.txt): the encoder (--head=encoder), its tokenizer's vocabulary and
`lowercase`; its pooled_dense has no counterpart here and is left out (with a warning).

`--format=huggingface` writes `--head`'s network as ElectraForPreTraining (discriminator),
ElectraForMaskedLM (generator) or ElectraModel (encoder): config.json, model.safetensors,
vocab.txt, tokenizer_config.json, special_tokens_map.json (`transformers`' from_pretrained and
AutoTokenizer.from_pretrained read it). `--format=keras_hub --head=encoder` writes the encoder
as a keras-hub preset (keras_hub.models.ElectraBackbone / ElectraTokenizer.from_preset read it;
no keras-hub needed to write it). keras-hub applies the tanh approximation of GELU: an exact-GELU
model ("gelu") is refused unless --allow_activation_change, which prints the largest difference
on a probe batch; pooled_dense, which ELECTRA lacks, is written freshly initialised.

`--format=onnx` writes `model.onnx` (opset 17; ids in: int32 input_ids, input_mask,
segment_ids [batch, length]; the outputs of `serving_default` below), which `onnxruntime` runs
without TensorFlow, PyTorch or transformers; `--format=litert` writes `model.tflite` (ids in,
TFLite builtin ops only; text in does not convert, see docs/SERVING.md) and, with
`--quantize=dynamic_int8`, also `model_dynamic_int8.tflite` (int8 weights). Both write
`vocab.txt` and `export_config.json` beside the model, and need `pip install
'electra_tf[serving]'` (onnx, onnxruntime; LiteRT conversion needs TensorFlow only).

The SavedModel's signatures: `serving_default` (int32
input_ids, input_mask, segment_ids), `serve_text` (strings) and `serve_text_pair` (two string
batches); loading it needs `import tensorflow_text`.

A fine-tuned model (`run_finetuning.py` with `keep_all_models`: the `config.json` beside the
checkpoint is of kind "finetuning", or has `task_names` if written before config.json recorded
its kind) is detected and exported with its task outputs instead (`--head` does not apply;
`--format=saved_model`, or `--format=litert` for a model with one classification task: ids in,
`logits`/`probabilities`/`label_id` out, the labels in export_config.json; `--max_seq_length`
defaults to the run's):

    python export_model.py \
        --checkpoint=DATA_DIR/models/NAME/finetuning_models/squad_model_1 --export_dir=OUT

Per task T, signatures `serve_T` (int32 input_ids, input_mask, segment_ids) and
  * classification (GLUE): `serve_text_T(text)`, `serve_text_pair_T(text_a, text_b)` ->
    `logits` [B, labels], `probabilities`, `label_id`, `label` (string from the task's labels);
  * regression (sts): the same signatures -> `prediction` (on the data's 0..5 scale);
  * tagging (chunk, ner): `serve_text_T(text)`, text = whitespace-separated words -> `words`,
    `num_words`, `tag_logits` [B, words, tags], `tag_ids`, `tags` (BIOES strings; -1 / "" past
    a row's words; words that do not fit in max_seq_length are dropped as the runner does).
    `serve_T` returns `tag_logits`/`tag_ids`/`tags` at every position (read the first
    sub-token of each word). The tag list comes from the task's data files (--data_dir);
  * QA (squad, squadv1, MRQA tasks): `serve_qa_T(question, context)` -> `answer` (the span's
    wordpieces joined, "##" glued: lower-cased/normalised text as the model sees it),
    `answer_words` (the whole whitespace-separated context words the span lies in, original
    text), `score` (start + end log-probability of the best span; -inf and "" when the beam
    holds no valid span), `null_score` (the answerability logit, > qa_na_threshold means
    unanswerable for SQuAD 2.0), `has_answer`, `start_position`/`end_position` and the packed
    features. The question is truncated to max_query_length sub-tokens and the context to ONE
    window (`[CLS] q [SEP] context [SEP]` in max_seq_length): unlike run_finetuning.py's sliding
    windows, the rest of a long context is not searched. Candidates: the head's beam, end >=
    start, both in the context, at most max_answer_length sub-tokens (the offline decoder's
    rules). `serve_T` returns the head's raw beam outputs.
Each kind of signature is also written without the suffix for the first task (in task_names
order) that has it: `serving_default` (the first task's `serve_T`), `serve_text`,
`serve_text_pair`, `serve_qa`.
"""

import os

from absl import app, flags

from electra_tf.errors import UserError, run_main

flags.DEFINE_string("checkpoint", None, "A checkpoint prefix or a directory (its latest).")
flags.DEFINE_string(
    "model_config",
    None,
    "BERT JSON model config, or a run's config.json; default: the one beside the checkpoint.",
)
flags.DEFINE_enum("head", "discriminator", ["discriminator", "generator", "encoder"], "Head.")
flags.DEFINE_string("export_dir", None, "Output directory (must not exist or be empty).")
flags.DEFINE_enum(
    "format",
    "saved_model",
    ["saved_model", "original_checkpoint", "huggingface", "keras_hub", "onnx", "litert"],
    "Format.",
)
flags.DEFINE_enum(
    "quantize",
    "none",
    ["none", "dynamic_int8"],
    "--format=litert: also write model_dynamic_int8.tflite (dynamic-range int8 weights).",
)
flags.DEFINE_enum(
    "serving_precision",
    "float32",
    ["float32", "bfloat16", "auto"],
    "--format=saved_model: the encoder's dense matmuls; bfloat16 is about twice as fast on a CPU "
    "with bfloat16 instructions (AVX512_BF16, AMX) and moves the outputs by bfloat16 rounding; "
    "auto measures both on this CPU and keeps the faster, recorded in export_config.json "
    "(docs/SERVING.md).",
)
flags.DEFINE_bool(
    "allow_activation_change",
    False,
    "--format=keras_hub: export an exact-GELU model although keras-hub applies the tanh GELU "
    "(the largest difference on a probe batch is printed).",
)
flags.DEFINE_string(
    "vocab_file", None, "WordPiece vocab; default: vocab.txt beside the checkpoint."
)
flags.DEFINE_integer(
    "max_seq_length",
    None,
    "Truncation/padding length of the text signatures; default 128 (at most "
    "max_position_embeddings), a fine-tuned model's own.",
)
flags.DEFINE_string(
    "data_dir",
    None,
    "Fine-tuned tagging models: the DATA_DIR whose finetuning_data/<task>/ files give the tag "
    "list; default: the run's.",
)
flags.DEFINE_bool(
    "do_lower_case", None, "Lower-case text in serve_text; default: the run's, else true."
)
FLAGS = flags.FLAGS


def check_vocab_found(vocab_file, prefix: str, run_dir) -> None:
    """A vocab is needed, except for a Hugging Face directory saved without its tokenizer
    (`save_pretrained` of a model alone): it exports without the text parts."""
    if vocab_file is not None:
        return
    if not run_dir.huggingface_dirs(prefix):  # a keras-hub preset always has its vocabulary
        raise UserError(f"{prefix}: no vocab.txt beside the checkpoint; pass --vocab_file")
    print(
        f"{prefix}: no vocab.txt or tokenizer.json: exporting without the tokenizer "
        "(SavedModel: serving_default only); pass --vocab_file for it",
        flush=True,
    )


def main() -> None:
    if not FLAGS.checkpoint or not FLAGS.export_dir:
        raise UserError("--checkpoint and --export_dir are required")
    if os.path.isdir(FLAGS.export_dir) and os.listdir(FLAGS.export_dir):  # before importing TF
        raise UserError(f"{FLAGS.export_dir}: the export directory is not empty; choose a new one")
    from electra_tf import export, run_dir
    from electra_tf.checkpoint import load_model, locate

    export.check_export_dir(FLAGS.export_dir)
    if FLAGS.quantize != "none" and FLAGS.format != "litert":
        raise UserError("--quantize applies to --format=litert only")
    if FLAGS.serving_precision != "float32" and FLAGS.format != "saved_model":
        raise UserError("--serving_precision applies to --format=saved_model only")
    prefix = locate.resolve_checkpoint(FLAGS.checkpoint)
    if FLAGS.model_config and run_dir.foreign_dirs(prefix):
        raise UserError(f"{prefix}: --model_config does not apply (its config.json is the model's)")
    vocab_file = FLAGS.vocab_file or locate.vocab_beside(prefix)
    config_path = FLAGS.model_config or locate.find_beside(prefix, run_dir.CONFIG_FILES)
    if export.is_finetuning_config(config_path):
        if FLAGS.format not in ("saved_model", "litert"):
            raise UserError(
                f"{config_path}: a fine-tuned model exports as --format=saved_model (or, a "
                "classifier, --format=litert)"
            )
        if vocab_file is None:
            raise UserError(f"{prefix}: no vocab.txt beside the checkpoint; pass --vocab_file")
        tuned = export.load_finetuned(prefix, vocab_file, config_path, FLAGS.data_dir)
        if FLAGS.format == "litert":
            paths = export.export_finetuned_litert(tuned, FLAGS.export_dir, FLAGS.quantize)
            print(f"wrote the fine-tuned {tuned.tasks[0].name} classifier as {', '.join(paths)}")
            return
        module = export.export_finetuned_saved_model(
            tuned, FLAGS.export_dir, FLAGS.max_seq_length, FLAGS.serving_precision
        )
        names = export.finetuned_signature_names(module)
        print(
            f"wrote the fine-tuned SavedModel ({', '.join(module.kinds[t.name] + ' ' + t.name for t in tuned.tasks)}) "
            f"to {FLAGS.export_dir}; signatures: {', '.join(sorted(names))}"
        )
    elif FLAGS.format == "huggingface":
        check_vocab_found(vocab_file, prefix, run_dir)
        loaded = load_model.load_networks(prefix, FLAGS.model_config, FLAGS.head)
        print(loaded.report.summary(), flush=True)
        names = export.export_huggingface(
            loaded, FLAGS.head, FLAGS.export_dir, vocab_file, FLAGS.do_lower_case
        )
        print(f"wrote the {FLAGS.head} ({len(names)} tensors) to {FLAGS.export_dir}")
    elif FLAGS.format in ("onnx", "litert"):
        check_vocab_found(vocab_file, prefix, run_dir)
        loaded = load_model.load_networks(prefix, FLAGS.model_config, FLAGS.head)
        print(loaded.report.summary(), flush=True)
        if FLAGS.format == "onnx":
            paths = [
                export.export_onnx(
                    loaded, FLAGS.head, FLAGS.export_dir, vocab_file, FLAGS.do_lower_case
                )
            ]
        else:
            paths = export.export_litert(
                loaded,
                FLAGS.head,
                FLAGS.export_dir,
                vocab_file,
                FLAGS.do_lower_case,
                FLAGS.quantize,
            )
        print(f"wrote the {FLAGS.head} as {', '.join(paths)}")
    elif FLAGS.format == "keras_hub":
        loaded = load_model.load_networks(prefix, FLAGS.model_config, FLAGS.head)
        print(loaded.report.summary(), flush=True)
        names = export.export_keras_hub(
            loaded,
            FLAGS.head,
            FLAGS.export_dir,
            vocab_file,
            FLAGS.do_lower_case,
            FLAGS.allow_activation_change,
        )
        print(
            f"wrote the keras-hub ElectraBackbone preset ({len(names)} weights) to {FLAGS.export_dir}"
        )
    elif FLAGS.format == "saved_model":
        check_vocab_found(vocab_file, prefix, run_dir)
        loaded = load_model.load_networks(prefix, FLAGS.model_config, FLAGS.head)
        print(loaded.report.summary(), flush=True)
        module = export.export_saved_model(
            loaded,
            FLAGS.head,
            FLAGS.export_dir,
            vocab_file,
            FLAGS.max_seq_length,
            FLAGS.do_lower_case,
            FLAGS.serving_precision,
        )
        print(
            f"wrote the {FLAGS.head} SavedModel ({module.inference.precision} matmuls) to "
            f"{FLAGS.export_dir}"
        )
    else:
        loaded = load_model.load_networks(prefix, FLAGS.model_config, None)
        print(loaded.report.summary(), flush=True)
        names = export.export_original_checkpoint(loaded, FLAGS.export_dir, vocab_file)
        print(f"wrote {len(names)} variables ({', '.join(loaded.parts)}) to {FLAGS.export_dir}")


if __name__ == "__main__":
    app.run(lambda argv: run_main(main))
