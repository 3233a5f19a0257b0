"""GPU readiness in one run: pretraining, fine-tuning and SavedModel inference throughput, with
MFU against the device's peak, next to NVIDIA's published figures for its TF2 ELECTRA on one
A100-40GB (Base pretraining AMP 955 seq/s; SQuAD fine-tuning AMP 317 seq/s; inference batch 1
FP16 6.0 ms).

    bash bench/gpu_check.sh            # on a GPU machine: about 5 minutes
    bash bench/gpu_check.sh --tiny     # a tiny model on the CPU in a minute (what the tests run)

Measured: ELECTRA-Small and ELECTRA-Base pretraining steps (length 128, mixed precision, XLA,
the run_pretraining.py step), ELECTRA-Base fine-tuning steps (classification at length 128, the
QA head at 384), and the exported discriminator SavedModel's latency at batch 1 and throughput
at batch 256 (length 128). Prints one JSON line per measurement, then a table.
"""

import argparse
import json
import os
import statistics
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NVIDIA_A100 = {  # NVIDIA DeepLearningExamples, TensorFlow2 ELECTRA, one A100-40GB
    "pretrain_base": "955 seq/s (AMP)",
    "finetune_squad": "317 seq/s (AMP)",
    "inference_b1": "6.0 ms (FP16)",
}
TINY_MODEL = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tiny", action="store_true", help="tiny models, few steps (CPU)")
    p.add_argument("--steps", type=int, default=None, help="measured steps per case")
    p.add_argument("--precision", default=None, help="default: mixed_bfloat16 on a GPU")
    return p.parse_args(argv)


def timed(fn, steps, warmup):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def synthetic(tf, batch, length, vocab=30522, seed=0):
    import numpy as np

    rng = np.random.default_rng(seed)
    ids = rng.integers(1000, vocab, (batch, length)).astype(np.int32)
    ids[:, 0], ids[:, -1] = 101, 102
    segments = np.zeros_like(ids)
    segments[:, length // 2 :] = 1
    return {
        "input_ids": tf.constant(ids),
        "input_mask": tf.ones_like(tf.constant(ids)),
        "segment_ids": tf.constant(segments),
    }


def pretrain_case(tf, tmp, size, batch, length, precision, steps, tiny):
    from electra_tf import data_layout
    from electra_tf.pretraining_config import PretrainingConfig
    from electra_tf.train import Trainer

    hparams = dict(
        model_size=size,
        train_batch_size=batch,
        max_seq_length=length,
        precision=precision,
        jit_compile=False if tiny else "auto",  # tiny: compiling would dominate the run
        vocab_file=data_layout.vocab_file(os.path.join(REPO, "data", "vocab")),
        model_dir=os.path.join(tmp, f"pretrain_{size}"),
        distribution="one_device",
    )
    if tiny:
        hparams.update(model_hparam_overrides=TINY_MODEL, embedding_size=32)
    trainer = Trainer(PretrainingConfig.from_flat("gpu_check", tmp, hparams))
    batches = synthetic(tf, batch, length)
    with tf.device("/cpu:0"):
        iterators = [iter(tf.data.Dataset.from_tensors(batches).repeat())]
    train_fn = trainer.step_function()
    per_call = 10

    def call():
        train_fn(iterators, tf.constant(per_call, tf.int32))[1].numpy()

    t = timed(call, max(1, steps // per_call), 1) / per_call
    return trainer, {
        "seq_per_s": batch / t,
        "mfu": trainer.real_flops_per_step / t / trainer.peak_flops,
        "step_ms": 1e3 * t,
        "xla": trainer.jit_compile,
    }


def finetune_case(tf, trainer, kind, batch, length, steps):
    """Fine-tuning steps of the pretrained discriminator's shape with a classification or QA head
    (forward, backward, clipping, ELECTRA AdamW)."""
    from electra_tf.finetune.classification.head import ClassificationHead
    from electra_tf.finetune.model import build_model
    from electra_tf.finetune.qa.head import QAHead
    from electra_tf.optimization import ElectraAdamW

    config = trainer.model.discriminator.config
    feats = synthetic(tf, batch, length)
    feats["task_id"] = tf.zeros([batch], tf.int32)
    if kind == "qa":
        head = QAHead("squad", hidden_size=config.hidden_size, name="squad")
        feats.update(
            squad_start_positions=tf.fill([batch], 5),
            squad_end_positions=tf.fill([batch], 9),
            squad_is_impossible=tf.zeros([batch], tf.int32),
        )
    else:
        head = ClassificationHead("sst", 2, name="sst")
        feats.update(sst_label_ids=tf.zeros([batch], tf.int32), sst_eid=tf.range(batch))
    model, variables = build_model(config, [head], feats)
    opt = ElectraAdamW(1e-4, variables)

    @tf.function(jit_compile=trainer.jit_compile)
    def step(f):
        with tf.GradientTape() as tape:
            loss, _ = model(f, training=True)
        grads = tape.gradient(loss, variables)
        grads = [tf.convert_to_tensor(g) for g in grads]
        grads, _ = opt.clip(grads)
        opt.apply_gradients(grads)
        return loss

    t = timed(lambda: step(feats).numpy(), steps, 2)
    # 6 FLOPs per weight per token (2 forward, 4 backward), lookup tables excluded, attention
    # scores not counted: an approximate MFU
    weights = sum(int(tf.size(v)) for v in variables if "_embeddings" not in v.path)
    flops = 6.0 * length * batch * weights
    return {"seq_per_s": batch / t, "mfu": flops / t / trainer.peak_flops, "step_ms": 1e3 * t}


def inference_case(tf, tmp, trainer, length, batches, steps):
    """The discriminator exported as run by export_model.py's serving_default, loaded back."""
    import tensorflow_text  # noqa: F401  (the SavedModel's text signatures need its ops)

    from electra_tf.export.pretrained import ServingModule
    from electra_tf.tokenization import GraphTokenizer

    model = trainer.model
    tokenizer = GraphTokenizer(trainer.config.paths.vocab_file, True)
    module = ServingModule(
        model.discriminator, model.discriminator_predictions, tokenizer, length, model.special_ids
    )
    path = os.path.join(tmp, "saved_model")
    tf.saved_model.save(module, path, signatures={"serving_default": module.serve})
    serve = tf.saved_model.load(path).signatures["serving_default"]
    out = {}
    for b in batches:
        f = synthetic(tf, b, length)
        t = timed(lambda f=f: serve(**f)["discriminator_logits"].numpy(), steps, 2)
        out[b] = {"ms": 1e3 * t, "seq_per_s": b / t}
    return out


def main(argv=None):
    args = parse_args(argv)
    import tensorflow as tf

    from electra_tf.train import devices

    gpu = devices.accelerator_name()
    tiny = args.tiny
    precision = args.precision or ("float32" if tiny or gpu is None else "mixed_bfloat16")
    steps = args.steps or (5 if tiny else 50)
    tmp = tempfile.mkdtemp(prefix="gpu_check_")
    length, short = (32, 16) if tiny else (128, 128)
    rows = []

    def report(name, result, reference=""):
        print(json.dumps({"case": name, **result}), flush=True)
        rows.append((name, result, reference))

    sizes = (("small", 8 if tiny else 128),) + (() if tiny else (("base", 64),))
    trainer = None
    for size, batch in sizes:
        trainer, result = pretrain_case(tf, tmp, size, batch, short, precision, steps, tiny)
        ref = NVIDIA_A100["pretrain_base"] if size == "base" else ""
        report(f"pretrain ELECTRA-{size} L={short} b={batch}", result, ref)
    for kind, seq, batch in (
        ("cls", length, 8 if tiny else 64),
        ("qa", 2 * length if tiny else 384, 4 if tiny else 32),
    ):
        result = finetune_case(tf, trainer, kind, batch, seq, steps)
        ref = NVIDIA_A100["finetune_squad"] if kind == "qa" else ""
        report(
            f"fine-tune {'SQuAD head' if kind == 'qa' else 'classification'} L={seq} b={batch}",
            result,
            ref,
        )
    infer = inference_case(tf, tmp, trainer, short, (1, 8 if tiny else 256), steps)
    for b, r in infer.items():
        ref = NVIDIA_A100["inference_b1"] if b == 1 else ""
        report(f"SavedModel inference L={short} b={b}", r, ref)
    peak = trainer.peak_flops
    print(
        f"\ndevice: {gpu or devices.cpu_info()[0]}; precision {precision}; peak "
        f"{peak / 1e12:.2f} TFLOP/s ({trainer.peak_source}); XLA {trainer.jit_compile}"
    )
    print(f"{'case':44s} {'seq/s':>9s} {'ms':>8s} {'MFU':>6s}  NVIDIA A100-40GB")
    for name, r, ref in rows:
        ms = r.get("step_ms", r.get("ms"))
        mfu = f"{r['mfu']:6.1%}" if "mfu" in r else "     -"
        print(f"{name:44s} {r['seq_per_s']:9.1f} {ms:8.2f} {mfu}  {ref}")


if __name__ == "__main__":
    main()
