"""Hugging Face interop, both directions, checked against `transformers` itself.

    python bench/hf_interop.py [--peer_python /work/venv-bench/bin/python] [--work_dir DIR]

1. Hugging Face -> ours: `scripts/make_hf_checkpoints.py` (in the peer's environment) saves small
   random ElectraForPreTraining / ElectraForMaskedLM / ElectraModel directories with
   `save_pretrained` and what transformers computes on fixed inputs; each is exported here as a
   SavedModel (`export.export_saved_model`, what `export_model.py` runs) -- alone, and as the
   pairs disc_proj,gen_shared (tied embeddings) and disc_proj,gen_tied (untied) -- and the
   SavedModel's `serving_default` is compared with transformers' logits; its `serve_text_pair`
   ids with transformers' tokenizer's.
2. ours -> Hugging Face: a tiny pretraining checkpoint of this project (random weights,
   embedding 16 != hidden 32, generator hidden 24, tied embeddings) and the directories of step
   1 are exported with `--format=huggingface`, loaded by `bench/hf_peer_check.py` (the peer's
   environment: from_pretrained with output_loading_info, AutoTokenizer, every warning
   recorded), and transformers' logits are compared with this project's SavedModel's.

Prints one JSON line (max |delta| per case over real tokens and over all positions, the loading
info, the warnings), then a table. Exit 1 when a case exceeds 1e-4, a key is missing or
unexpected, a warning is logged or the token ids differ.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOLERANCE = 1e-4
SENTENCES = [["The quick brown fox jumps over the lazy dog.", None]]
SENTENCES += [["ELECTRA trains a discriminator.", "It detects replaced tokens!"]]
# (name, checkpoint relative to the made directories, head, the reference .npz)
FROM_HF = [
    ("disc_proj", "disc_proj", "discriminator", "disc_proj"),
    ("disc_noproj (gelu_new, cased)", "disc_noproj", "discriminator", "disc_noproj"),
    ("gen_tied", "gen_tied", "generator", "gen_tied"),
    ("gen_untied", "gen_untied", "generator", "gen_untied"),
    ("encoder (relu, 3 layers)", "encoder", "encoder", "encoder"),
    ("pair tied: generator", "disc_proj,gen_shared", "generator", "gen_shared"),
    ("pair tied: discriminator", "disc_proj,gen_shared", "discriminator", "disc_proj"),
    ("pair untied: generator", "disc_proj,gen_tied", "generator", "gen_tied"),
    ("disc_bare (no tokenizer files)", "disc_bare", "discriminator", "disc_bare"),
]
OUTPUT = {"discriminator": "discriminator_logits", "generator": "mlm_logits"}
IDS = {True: "same", False: "DIFF", None: "-   "}


def saved_model_outputs(path: str, feed) -> dict:
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (the SavedModel's tokenizer ops)

    m = tf.saved_model.load(path)
    out = m.signatures["serving_default"](
        input_ids=tf.constant(feed["input_ids"]),
        input_mask=tf.constant(feed["attention_mask"]),
        segment_ids=tf.constant(feed["token_type_ids"]),
    )
    result = {k: v.numpy() for k, v in out.items()}
    if "serve_text" not in m.signatures:  # exported without a vocab
        return result
    for i, (a, b) in enumerate(SENTENCES):
        if b is None:
            t = m.signatures["serve_text"](text=tf.constant([a]))
        else:
            t = m.signatures["serve_text_pair"](text_a=tf.constant([a]), text_b=tf.constant([b]))
        n = int(t["input_mask"].numpy()[0].sum())
        result[f"text_ids_{i}"] = t["input_ids"].numpy()[0, :n]
    return result


def delta(ours: np.ndarray, theirs: np.ndarray, mask: np.ndarray) -> dict:
    d = np.abs(ours.astype(np.float64) - theirs.astype(np.float64))
    real = mask.astype(bool)
    return {"max_abs_delta": float(d[real].max()), "max_abs_delta_all": float(d.max())}


def export(checkpoint: str, head: str, out: str, fmt: str) -> None:
    from electra_tf import export as ex
    from electra_tf.checkpoint import load_model, locate

    vocab = locate.vocab_beside(checkpoint)
    loaded = load_model.load_networks(checkpoint, head=head)
    if fmt == "saved_model":
        ex.export_saved_model(loaded, head, out, vocab)
    else:
        ex.export_huggingface(loaded, head, out, vocab)


def our_checkpoint(directory: str) -> str:
    """A tiny pretraining run directory of this project with random weights."""
    import tensorflow as tf

    from electra_tf import data_layout, run_dir
    from electra_tf.pretraining_config import PretrainingConfig
    from electra_tf.pretraining_networks import build_pretrainer
    from electra_tf.vocab import read_vocab, special_token_ids

    vocab = data_layout.vocab_file(os.path.join(REPO, "data", "vocab"))
    hparams = dict(
        model_size="small",
        embedding_size=16,
        model_hparam_overrides=dict(
            hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64
        ),
        generator_hidden_size=0.75,
        max_seq_length=32,
    )
    config = PretrainingConfig.from_flat("ours", directory, hparams)
    tokens = read_vocab(vocab)
    model = build_pretrainer(config, len(tokens), special_token_ids(tokens, vocab))
    rng = np.random.default_rng(0)
    for v in {id(w): w for w in model.weights}.values():
        v.assign(rng.normal(0, 0.05, v.shape).astype(np.float32) + ("gamma" in v.path))
    run = run_dir.RunDirectory(directory)
    disc, gen = config.model_configs(len(tokens))
    run.write_config(run_dir.PRETRAINING, config.to_flat(), disc, gen)
    run.copy_vocab(vocab)
    tf.train.Checkpoint(model=model).save(os.path.join(directory, data_layout.CHECKPOINT_NAME))
    return directory


def peer(python: str, directory: str, inputs: str, out: str, sentences: str) -> dict:
    cmd = [python, os.path.join(REPO, "bench", "hf_peer_check.py"), "--dir", directory]
    cmd += ["--inputs", inputs, "--out", out, "--sentences", sentences]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"hf_peer_check.py failed on {directory}:\n{p.stderr[-3000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--peer_python", default="/work/venv-bench/bin/python")
    p.add_argument("--work_dir", default=None)
    args = p.parse_args()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    work = args.work_dir or tempfile.mkdtemp(prefix="hf_interop_")
    made = os.path.join(work, "hf")
    subprocess.run([args.peer_python, "-m", "scripts.make_hf_checkpoints", "--out", made],
                   check=True, capture_output=True, cwd=REPO)  # fmt: skip
    sentences = os.path.join(work, "sentences.json")
    with open(sentences, "w") as f:
        json.dump(SENTENCES, f)
    cases, ok = [], True
    for name, checkpoint, head, ref in FROM_HF:  # 1. Hugging Face -> ours
        ckpt = ",".join(os.path.join(made, c) for c in checkpoint.split(","))
        out = os.path.join(work, "sm", re.sub(r"\W+", "_", name) + "_" + head)
        export(ckpt, head, out, "saved_model")
        r = np.load(os.path.join(made, f"{ref}.npz"))
        ours = saved_model_outputs(out, r)
        case = {"direction": "hf->ours", "case": name, "head": head}
        case.update(
            delta(ours[OUTPUT.get(head, "sequence_output")], r["logits"], r["attention_mask"])
        )
        case["hidden"] = delta(ours["sequence_output"], r["last_hidden_state"], r["attention_mask"])
        rows = [r["input_ids"][i][r["attention_mask"][i] > 0] for i in range(len(SENTENCES))]
        case["same_token_ids"] = None  # no tokenizer to compare
        if "text_ids_0" in ours:
            case["same_token_ids"] = all(
                np.array_equal(ours[f"text_ids_{i}"], rows[i]) for i in range(len(SENTENCES))
            )
        cases.append(case)
    sources = [("ours (E 16, H 32, gen H 24)", our_checkpoint(os.path.join(work, "ours")))]
    sources += [
        (f"{c} (from step 1)", os.path.join(made, c)) for c in ("disc_noproj", "gen_untied")
    ]
    feed = np.load(os.path.join(made, "disc_proj.npz"))  # the inputs (shared vocab)
    for name, checkpoint in sources:  # 2. ours -> Hugging Face
        heads = ["discriminator", "generator", "encoder"] if name.startswith("ours") else []
        heads = heads or ["generator" if "gen" in name else "discriminator"]
        for head in heads:
            tag = f"{name.split()[0]}_{head}"
            hf_dir, sm = os.path.join(work, "to_hf", tag), os.path.join(work, "to_hf_sm", tag)
            export(checkpoint, head, hf_dir, "huggingface")
            export(checkpoint, head, sm, "saved_model")
            ours = saved_model_outputs(sm, feed)
            theirs_path = os.path.join(work, f"{tag}_peer.npz")
            report = peer(
                args.peer_python,
                hf_dir,
                os.path.join(made, "disc_proj.npz"),
                theirs_path,
                sentences,
            )
            theirs = np.load(theirs_path)
            case = {"direction": "ours->hf", "case": name, "head": head, **report}
            key = OUTPUT.get(head, "sequence_output")
            case.update(delta(ours[key], theirs["logits"], feed["attention_mask"]))
            case["same_token_ids"] = all(
                np.array_equal(ours[f"text_ids_{i}"], theirs[f"text_ids_{i}"])
                for i in range(len(SENTENCES))
            )
            info = report["loading_info"]
            case["clean_load"] = not any(info.values()) and not report["warnings"]
            ok &= case["clean_load"]
            cases.append(case)
    for c in cases:
        ok &= c["max_abs_delta_all"] < TOLERANCE and c["same_token_ids"] is not False
    print(json.dumps({"ok": bool(ok), "tolerance": TOLERANCE, "cases": cases}), flush=True)
    print(
        f"\n{'direction':9} {'case':32} {'head':14} {'max|d| real':>12} {'max|d| all':>12}  ids  load"
    )
    for c in cases:
        load = {True: "clean", False: "WARN", None: "-"}[c.get("clean_load")]
        print(
            f"{c['direction']:9} {c['case']:32} {c['head']:14} {c['max_abs_delta']:12.3g} "
            f"{c['max_abs_delta_all']:12.3g}  {IDS[c['same_token_ids']]} {load}"
        )
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
