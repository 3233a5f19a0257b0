"""keras-hub interop, both directions, checked against keras-hub itself, on the TensorFlow backend
and (in a subprocess with KERAS_BACKEND=jax) on JAX.

    python bench/keras_hub_interop.py [--work_dir DIR] [--backends tensorflow,jax]

1. keras-hub -> ours: a random ElectraBackbone (embedding 8 != hidden 16, 2 layers, seeded noise
   on every weight) and an ElectraTokenizer over a small vocab are saved with `save_to_preset`;
   `export_model.py --checkpoint=PRESET --head=encoder` makes a SavedModel whose `serve_text`
   ids and sequence output are compared with keras-hub's on real text.
2. ours -> keras-hub: the preset is exported again with `--format=keras_hub`, and so is a
   pretraining checkpoint of this project (tanh GELU, BERT's vocab); each export is loaded with
   `ElectraBackbone.from_preset` / `ElectraTokenizer.from_preset` on every backend asked for
   (warnings recorded) and its sequence output compared with this project's (the keras-hub
   original's for the re-export).
3. The exact-GELU case: the same checkpoint trained with `gelu`, exported with
   `--allow_activation_change`: the printed probe-batch difference next to keras-hub's real one.

Prints one JSON line (max |delta| over real tokens per case and backend, the warnings), then a
table. Exit 1 when a case that should match exceeds 1e-4 or a warning mentions weights.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

from electra_tf import data_layout

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "CUDA_VISIBLE_DEVICES": "", "PYTHONPATH": REPO}
TEXTS = ["Hello, world!", "The cat sat on the mat.", "the dogs ran jumping playing", "A Dog!"]
# the fixtures tests/test_keras_hub.py uses too: a small vocab, a backbone whose embedding width
# differs from its hidden width (the projection is exercised), and a tiny pretraining run
WORDS = ["the", "a", "cat", "dog", "sat", "on", "mat", "run", "##s", "##ing", "hello", "world"]
WORDS += [",", ".", "!", "?", "'", "play", "##ed", "un", "##want", "jump"]
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + WORDS
LENGTH = 24  # the preset's max_sequence_length
BACKBONE = dict(vocab_size=len(VOCAB), num_layers=2, num_heads=2, hidden_dim=16, embedding_dim=8,
                intermediate_dim=32, max_sequence_length=LENGTH)  # fmt: skip
TINY_RUN = dict(
    model_size="small",
    embedding_size=32,
    model_hparam_overrides=dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                intermediate_size=64, hidden_dropout_prob=0.0,
                                attention_probs_dropout_prob=0.0),
    generator_hidden_size=0.5, max_seq_length=32, train_batch_size=4, num_train_steps=6,
    num_warmup_steps=2, learning_rate=1e-3, save_checkpoints_steps=2, log_every_steps=1,
    shuffle_buffer_size=1, jit_compile=False, seed=3, deterministic=True,
)  # fmt: skip
# run in a fresh process per backend: loads a preset, packs TEXTS, prints its outputs as JSON
LOAD = r"""
import json, sys, warnings
import numpy as np
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    import keras, keras_hub
    backbone = keras_hub.models.ElectraBackbone.from_preset(sys.argv[1])
    tok = keras_hub.models.ElectraTokenizer.from_preset(sys.argv[1])
ids = np.array(json.loads(sys.argv[2]), np.int32)
x = {"token_ids": ids, "segment_ids": np.zeros_like(ids), "padding_mask": (ids != 0).astype("int32")}
seq = keras.ops.convert_to_numpy(backbone(x)["sequence_output"])
print(json.dumps({"backend": keras.backend.backend(), "seq": seq.tolist(),
                  "warnings": [str(w.message) for w in caught]}))
"""


def script(*args, env=None):
    p = subprocess.run(
        [sys.executable, *args], env=env or ENV, capture_output=True, text=True, cwd=REPO
    )
    if p.returncode != 0:
        raise SystemExit(f"{args[0]} failed:\n{p.stderr[-3000:]}")
    return p


def keras_hub_pack(tokenizer, texts, length=LENGTH):
    """[CLS] tokens [SEP], padded: keras-hub's tokenizer, packed by hand."""
    cls, sep = tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]")
    ids = np.zeros((len(texts), length), np.int32)
    tokens = tokenizer(texts)
    for row, pieces in enumerate(tokens.to_list() if hasattr(tokens, "to_list") else tokens):
        seq = [cls] + [int(t) for t in pieces][: length - 2] + [sep]
        ids[row, : len(seq)] = seq
    mask = (ids != 0).astype(np.int32)
    return {"token_ids": ids, "segment_ids": np.zeros_like(ids), "padding_mask": mask}


def build_tiny_dataset(directory: str, lines: int = 600) -> str:
    """DATA_DIR with BERT's vocab and 2 TFRecord shards (length 32) of the bundled corpus's first
    `lines` lines, built by build_pretraining_dataset.py."""
    os.makedirs(directory, exist_ok=True)
    corpus = os.path.join(directory, "corpus.txt")
    with open(os.path.join(REPO, "data", "corpus", "enwiki_sample.txt"), encoding="utf-8") as f:
        text = f.readlines()[:lines]
    with open(corpus, "w", encoding="utf-8") as out:
        out.writelines(text)
    vocab = data_layout.vocab_file(directory)
    shutil.copyfile(data_layout.vocab_file(os.path.join(REPO, "data", "vocab")), vocab)
    script("build_pretraining_dataset.py", f"--corpus_dir={corpus}", f"--vocab_file={vocab}",
           f"--output_dir={data_layout.tfrecord_dir(directory)}", "--max_seq_length=32",
           "--num_out_files=2", "--num_processes=1")  # fmt: skip
    return directory


def load_in(backend: str, preset: str, ids: np.ndarray) -> dict:
    p = script("-c", LOAD, preset, json.dumps(ids.tolist()), env={**ENV, "KERAS_BACKEND": backend})
    return json.loads(p.stdout.strip().splitlines()[-1])


def delta(a, b, ids) -> float:
    return float(np.abs(np.asarray(a) - np.asarray(b))[ids != 0].max())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--work_dir", default=None)
    parser.add_argument("--backends", default="tensorflow,jax")
    args = parser.parse_args()
    work = args.work_dir or tempfile.mkdtemp(prefix="keras_hub_interop_")
    os.makedirs(work, exist_ok=True)
    backends = args.backends.split(",")
    import keras
    import keras_hub
    import tensorflow as tf
    import tensorflow_text  # noqa: F401

    from electra_tf.checkpoint import load_model

    rows, warned, failed = [], [], False
    vocab_file = data_layout.vocab_file(work)
    with open(vocab_file, "w") as f:
        f.writelines(t + "\n" for t in VOCAB)
    keras.utils.set_random_seed(1)
    backbone = keras_hub.models.ElectraBackbone(**BACKBONE, name="electra_backbone")
    rng = np.random.default_rng(0)
    for w in backbone.weights:
        w.assign(np.asarray(w) + rng.normal(0, 0.2, w.shape).astype(np.float32))
    tokenizer = keras_hub.models.ElectraTokenizer(
        vocabulary=vocab_file, lowercase=True, strip_accents=True, name="electra_tokenizer"
    )
    preset = os.path.join(work, "preset")
    backbone.save_to_preset(preset)
    tokenizer.save_to_preset(preset)
    x = keras_hub_pack(tokenizer, TEXTS)
    theirs = np.asarray(backbone(x)["sequence_output"])

    sm = os.path.join(work, "saved_model")
    script("export_model.py", f"--checkpoint={preset}", "--head=encoder", f"--export_dir={sm}")
    served = tf.saved_model.load(sm).signatures["serve_text"](text=tf.constant(TEXTS))
    same_ids = bool((served["input_ids"].numpy() == x["token_ids"]).all())
    d = delta(served["sequence_output"].numpy(), theirs, x["token_ids"])
    rows.append(("keras-hub -> ours", "preset -> SavedModel (serve_text)", "tensorflow", d))
    failed |= d > 1e-4 or not same_ids

    again = os.path.join(work, "again")
    script(
        "export_model.py",
        f"--checkpoint={preset}",
        "--head=encoder",
        "--format=keras_hub",
        f"--export_dir={again}",
    )
    for b in backends:
        out = load_in(b, again, x["token_ids"])
        d = delta(out["seq"], theirs, x["token_ids"])
        rows.append(("ours -> keras-hub", "re-export of the preset", out["backend"], d))
        warned += [w for w in out["warnings"] if "weight" in w.lower()]
        failed |= d > 1e-4

    data = build_tiny_dataset(os.path.join(work, "data"))
    for act in ("gelu_approximate", "gelu"):
        hparams = json.loads(json.dumps(TINY_RUN))
        hparams["model_hparam_overrides"]["hidden_act"] = act
        script(
            "run_pretraining.py",
            f"--data_dir={data}",
            f"--model_name={act}",
            f"--hparams={json.dumps(hparams)}",
        )
        run = data_layout.model_dir(data, act)
        out_dir = os.path.join(work, f"run_{act}")
        p = script(
            "export_model.py",
            f"--checkpoint={run}",
            "--head=encoder",
            "--format=keras_hub",
            "--allow_activation_change",
            f"--export_dir={out_dir}",
        )
        probe = [ln for ln in p.stderr.splitlines() if "tanh approximation" in ln]
        tok = keras_hub.models.ElectraTokenizer.from_preset(out_dir)
        xr = keras_hub_pack(tok, TEXTS, length=32)
        enc = load_model.load_networks(run, head="encoder").networks.discriminator
        ours = enc(xr["token_ids"], xr["padding_mask"], xr["segment_ids"]).numpy()
        for b in backends:
            out = load_in(b, out_dir, xr["token_ids"])
            d = delta(out["seq"], ours, xr["token_ids"])
            printed = probe[0].rsplit("up to ", 1)[1].split()[0] if probe else None
            what = f"pretraining run, {act}" + (f" (probe batch: {printed})" if printed else "")
            rows.append(("ours -> keras-hub", what, out["backend"], d))
            warned += [w for w in out["warnings"] if "weight" in w.lower()]
            failed |= act != "gelu" and d > 1e-4
    print(json.dumps({"rows": rows, "weight_warnings": warned, "same_ids": same_ids}))
    print("| direction | case | backend | max abs delta |\n| --- | --- | --- | --- |")
    for r in rows:
        print(f"| {r[0]} | {r[1]} | {r[2]} | {r[3]:.1e} |")
    sys.exit(1 if failed or warned else 0)


if __name__ == "__main__":
    main()
