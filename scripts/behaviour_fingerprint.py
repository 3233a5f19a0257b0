"""A fingerprint of what the project computes, through its command-line interface only.

    python scripts/behaviour_fingerprint.py --out FP.json [--work_dir DIR] [--quick]
    python scripts/behaviour_fingerprint.py --compare A.json B.json

Used to show that a refactoring preserves behaviour: run it at two commits and compare. It
builds TFRecords from the first 3,000 lines of the bundled corpus with the BERT vocab, then
  * pretrains a tiny ELECTRA for 20 deterministic steps (XLA, the default) with eval, and every
    other objective / generator variant for 4 steps without XLA;
  * records eval_results.json, and every tensor of every final checkpoint (key, shape, sha256
    of its bytes) -- so weights and variable paths are both compared;
  * records `--describe` (parameter counts, FLOPs per step) for the size presets and objectives;
  * exports the discriminator and the generator as SavedModels and records their outputs on
    fixed ids and on fixed sentences;
  * fine-tunes on the bundled polarity sample (seeded, 1 trial) and on hand-made STS and CoNLL
    chunking files, exports the fine-tuned model and records results and signature outputs.
Only the CLI, `tf.train.load_checkpoint` and `tf.saved_model.load` are used, so the script
works unchanged across refactorings of the package.
"""

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PY = sys.executable
TINY = dict(
    model_size="small",
    model_hparam_overrides=dict(
        hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=128
    ),
    embedding_size=32,
    train_batch_size=8,
    eval_batch_size=8,
    max_seq_length=64,
    num_warmup_steps=5,
    learning_rate=1e-3,
    num_eval_steps=4,
    log_every_steps=5,
    do_eval=True,
    deterministic=True,
    seed=3,
)
VARIANTS = {
    "mlm": dict(objective="mlm"),
    "original_mlm": dict(electra_objective=False),
    "electra_15": dict(objective="electra_15"),
    "replace_mlm": dict(objective="replace_mlm"),
    "all_tokens_mlm": dict(objective="all_tokens_mlm"),
    "adversarial": dict(adversarial_generator=True),
    "unigram": dict(uniform_generator="unigram"),
    "uniform": dict(uniform_generator=True),
    "tied_generator": dict(untied_generator=False, generator_hidden_size=1.0),
    "untied_embeddings": dict(untied_generator_embeddings=True, disallow_correct=True),
    "accum_bf16": dict(gradient_accumulation_steps=2, precision="mixed_bfloat16"),
}
DESCRIBE = {
    "small": {},
    "base": dict(model_size="base"),
    "large": dict(model_size="large"),
    **{f"small_{k}": v for k, v in VARIANTS.items() if k != "accum_bf16"},
}
SENTENCES = ["a gripping, funny and moving film .", "dull , lifeless and far too long"]


def run(args, cwd=REPO, check=True):
    proc = subprocess.run(args, cwd=cwd, capture_output=True, text=True)
    if check and proc.returncode:
        sys.stderr.write(proc.stdout[-4000:] + proc.stderr[-4000:])
        raise SystemExit(f"failed: {' '.join(args)}")
    return proc


def checkpoint_tensors(model_dir):
    import numpy as np
    import tensorflow as tf

    prefix = tf.train.latest_checkpoint(model_dir)
    reader = tf.train.load_checkpoint(prefix)
    out = {}
    for key in sorted(reader.get_variable_to_shape_map()):
        if key == "_CHECKPOINTABLE_OBJECT_GRAPH":
            continue
        try:
            value = reader.get_tensor(key)
        except tf.errors.InternalError:  # a variant (a data iterator's state): not a numpy type
            out[key] = {"shape": reader.get_variable_to_shape_map()[key], "kind": "variant"}
            continue
        arr = np.asarray(value)
        if arr.dtype == object:  # iterator state: bytes
            digest = hashlib.sha256(b"".join(bytes(x) for x in arr.reshape(-1))).hexdigest()
            out[key] = {"shape": list(arr.shape), "sha256": digest, "kind": "bytes"}
            continue
        out[key] = {
            "shape": list(arr.shape),
            "dtype": str(arr.dtype),
            "sha256": hashlib.sha256(np.ascontiguousarray(arr).tobytes()).hexdigest(),
            "sum": float(np.sum(arr.astype(np.float64))) if arr.size else 0.0,
        }
    return os.path.basename(prefix), out


def saved_model_outputs(export_dir, calls):
    import numpy as np
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (the text signatures' ops)

    loaded = tf.saved_model.load(export_dir)
    result = {"signatures": sorted(loaded.signatures.keys())}
    for name, kwargs in calls:
        if name not in loaded.signatures:
            result[name] = "missing"
            continue
        out = loaded.signatures[name](**kwargs)
        rec = {}
        for k, v in sorted(out.items()):
            arr = v.numpy()
            if arr.dtype == object:
                rec[k] = [x.decode() if isinstance(x, bytes) else str(x) for x in arr.reshape(-1)]
            else:
                rec[k] = {
                    "shape": list(arr.shape),
                    "sha256": hashlib.sha256(np.ascontiguousarray(arr).tobytes()).hexdigest(),
                    "head": [float(x) for x in arr.reshape(-1)[:6]],
                }
        result[name] = rec
    return result


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out")
    p.add_argument("--work_dir")
    p.add_argument("--quick", action="store_true", help="skip the variants and fine-tuning")
    p.add_argument("--compare", nargs=2)
    a = p.parse_args()
    if a.compare:
        return compare(*a.compare)
    work = a.work_dir or tempfile.mkdtemp(prefix="fingerprint_")
    fp = {}
    corpus = os.path.join(work, "corpus")
    os.makedirs(corpus, exist_ok=True)
    with open(os.path.join(REPO, "data", "corpus", "enwiki_sample.txt"), encoding="utf-8") as f:
        lines = f.readlines()[:3000]
    with open(os.path.join(corpus, "wiki.txt"), "w", encoding="utf-8") as f:
        f.writelines(lines)
    vocab = os.path.join(work, "vocab.txt")
    shutil.copyfile(os.path.join(REPO, "data", "vocab", "vocab.txt"), vocab)
    run(
        [
            PY,
            "build_pretraining_dataset.py",
            f"--corpus_dir={corpus}",
            f"--vocab_file={vocab}",
            f"--output_dir={work}/pretrain_tfrecords",
            "--max_seq_length=64",
            "--num_out_files=2",
            "--num_processes=1",
            "--seed=5",
        ]
    )
    info = json.load(open(os.path.join(work, "pretrain_tfrecords", "dataset_info.json")))
    fp["dataset_info"] = {k: v for k, v in info.items() if "path" not in k and "dir" not in k}
    tf_files = sorted(os.listdir(os.path.join(work, "pretrain_tfrecords")))
    fp["dataset_files"] = {
        n: hashlib.sha256(
            open(os.path.join(work, "pretrain_tfrecords", n), "rb").read()
        ).hexdigest()
        for n in tf_files
        if n.startswith("pretrain_data")
    }

    def pretrain(name, hp):
        run(
            [
                PY,
                "run_pretraining.py",
                f"--data_dir={work}",
                f"--model_name={name}",
                "--hparams=" + json.dumps(hp),
            ]
        )
        model_dir = os.path.join(work, "models", name)
        ckpt, tensors = checkpoint_tensors(model_dir)
        ev = json.load(open(os.path.join(model_dir, "eval_results.json")))
        timing = ("flops_per_second", "mfu", "train_flops_per_second", "train_mfu")
        ev = {k: v for k, v in ev.items() if not any(t in k for t in timing)}
        return {"checkpoint": ckpt, "eval": ev, "tensors": tensors}

    fp["pretrain"] = {
        "electra": pretrain("electra", dict(TINY, num_train_steps=20, save_checkpoints_steps=10))
    }
    if not a.quick:
        for name, extra in VARIANTS.items():
            hp = dict(
                TINY,
                num_train_steps=4,
                save_checkpoints_steps=4,
                jit_compile=False,
                num_eval_steps=2,
                **extra,
            )
            fp["pretrain"][name] = pretrain(name, hp)

    fp["describe"] = {}
    for name, extra in DESCRIBE.items():
        out = run(
            [
                PY,
                "run_pretraining.py",
                f"--data_dir={work}",
                "--model_name=d",
                "--describe",
                "--hparams=" + json.dumps(extra),
            ]
        ).stdout
        d = json.loads(out[out.index("{") :])
        fp["describe"][name] = {
            "parameters": d["parameters"],
            "flops_per_step": d["flops_per_step"],
            "model_config": d["model_config"],
            "generator_config": d["generator_config"],
            "max_predictions_per_seq": d["max_predictions_per_seq"],
        }

    import numpy as np
    import tensorflow as tf

    ids = np.array([[101, 7592, 2088, 2003, 1037, 3231, 102, 0]] * 2, np.int32)
    ids[1, 3] = 103
    mask = (ids != 0).astype(np.int32)
    seg = np.zeros_like(ids)
    seg[:, 4:] = 1
    tensors = dict(
        input_ids=tf.constant(ids), input_mask=tf.constant(mask), segment_ids=tf.constant(seg)
    )
    text = dict(text=tf.constant(SENTENCES))
    pair = dict(text_a=tf.constant(SENTENCES), text_b=tf.constant(SENTENCES[::-1]))
    fp["export"] = {}
    for head in ("discriminator", "generator", "encoder"):
        out_dir = os.path.join(work, f"export_{head}")
        run(
            [
                PY,
                "export_model.py",
                f"--checkpoint={work}/models/electra",
                f"--head={head}",
                f"--export_dir={out_dir}",
            ]
        )
        fp["export"][head] = saved_model_outputs(
            out_dir, [("serving_default", tensors), ("serve_text", text), ("serve_text_pair", pair)]
        )
    tf1 = os.path.join(work, "export_tf1")
    run(
        [
            PY,
            "export_model.py",
            f"--checkpoint={work}/models/electra",
            "--format=original_checkpoint",
            f"--export_dir={tf1}",
        ]
    )
    reader = tf.train.load_checkpoint(tf1)
    fp["export"]["original_checkpoint"] = {
        k: hashlib.sha256(np.asarray(reader.get_tensor(k)).tobytes()).hexdigest()
        for k in sorted(reader.get_variable_to_shape_map())
    }

    if not a.quick:
        ft = os.path.join(work, "finetuning_data")
        shutil.copytree(os.path.join(REPO, "data", "sst_polarity"), os.path.join(ft, "sst"))
        for task in ("sts", "chunk"):
            shutil.copytree(
                os.path.join(REPO, "tests", "data", "finetune", task), os.path.join(ft, task)
            )
        fp["finetune"] = {}
        for name, hp in {
            "sst": dict(
                task_names=["sst"],
                seed=0,
                num_trials=1,
                num_train_epochs=2.0,
                learning_rate=1e-3,
                keep_all_models=True,
                jit_compile=False,
            ),
            "multi": dict(
                task_names=["sts", "chunk"],
                seed=1,
                num_trials=1,
                num_train_epochs=2.0,
                max_seq_length=32,
                keep_all_models=True,
                jit_compile=False,
            ),
        }.items():
            run(
                [
                    PY,
                    "run_finetuning.py",
                    f"--data_dir={work}",
                    "--model_name=electra",
                    "--hparams=" + json.dumps(hp),
                ]
            )
            res_dir = os.path.join(work, "models", "electra", "results")
            fp["finetune"][name] = {
                t: json.load(open(os.path.join(res_dir, f"{t}.json"))) for t in hp["task_names"]
            }
            for f in sorted(os.listdir(res_dir)):
                if f.endswith(".tsv"):
                    fp["finetune"][name][f] = open(os.path.join(res_dir, f)).read()
            models = os.path.join(work, "models", "electra", "finetuning_models")
            tuned = os.path.join(models, sorted(os.listdir(models))[-1])
            out_dir = os.path.join(work, f"export_ft_{name}")
            run([PY, "export_model.py", f"--checkpoint={tuned}", f"--export_dir={out_dir}"])
            calls = [("serve_text", text), ("serve_text_pair", pair)]
            for t in hp["task_names"]:
                calls += [(f"serve_text_{t}", text), (f"serve_text_pair_{t}", pair)]
            fp["finetune"][name]["export"] = saved_model_outputs(out_dir, calls)
            shutil.rmtree(models)
    text = json.dumps(fp, indent=1, sort_keys=True).replace(work, "<work>")
    fp = json.loads(text)
    drop_volatile(fp)
    with open(a.out, "w") as f:
        json.dump(fp, f, indent=1, sort_keys=True)
    print(f"wrote {a.out} (work dir {work})")


def drop_volatile(x):
    """Timings are not behaviour."""
    if isinstance(x, dict):
        for k in [k for k in x if k in ("train_seconds",)]:
            del x[k]
        for v in x.values():
            drop_volatile(v)
    elif isinstance(x, list):
        for v in x:
            drop_volatile(v)


def _close(x, y, rel=1e-5):
    if isinstance(x, bool) or isinstance(y, bool):
        return False
    if isinstance(x, (int, float)) and isinstance(y, (int, float)):
        return abs(x - y) <= rel * max(abs(x), abs(y)) + 1e-12
    return False


def compare(path_a, path_b):
    """Exact differences, and "close" ones: a tensor whose bytes differ but whose sum agrees to a
    relative 1e-5 (+ 1e-12), a float that agrees as closely (float reordering, not a change of behaviour)."""
    a, b = json.load(open(path_a)), json.load(open(path_b))
    diffs, close = [], []

    def walk(x, y, where):
        if isinstance(x, dict) and isinstance(y, dict):
            if "sha256" in x and "sum" in x and "sha256" in y and x["sha256"] != y["sha256"]:
                same_shape = x.get("shape") == y.get("shape")
                (close if same_shape and _close(x["sum"], y["sum"]) else diffs).append(
                    f"{where}: sum {x['sum']} vs {y['sum']}"
                )
                return
            for k in sorted(set(x) | set(y)):
                if k not in x or k not in y:
                    diffs.append(f"{where}/{k}: only in {'B' if k not in x else 'A'}")
                else:
                    walk(x[k], y[k], f"{where}/{k}")
        elif isinstance(x, list) and isinstance(y, list) and len(x) == len(y):
            for i, (u, v) in enumerate(zip(x, y)):
                walk(u, v, f"{where}[{i}]")
        elif x != y:
            (close if _close(x, y) else diffs).append(f"{where}: {str(x)[:120]} != {str(y)[:120]}")

    walk(a, b, "")
    for d in diffs:
        print("DIFF", d)
    groups = sorted({"/".join(c.split("/")[:3]) for c in close})
    print(f"{len(diffs)} difference(s); {len(close)} close (rel 1e-5) in: {', '.join(groups)}")
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
