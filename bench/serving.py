"""Serving on CPU, one alternating run: this project's SavedModel (each signature: ids, text,
text pair) against ONNX Runtime (ORT_ENABLE_ALL) on the ONNX export of the same weights, LiteRT
(XNNPACK) on its LiteRT export, and PyTorch eager on the Hugging Face export (only where torch
and transformers are installed; otherwise a printed note). With --finetuned, a kept fine-tuned
classifier too: its SavedModel, its LiteRT float32 and dynamic-range int8 files, and the
accuracy of each on the movie dev sentences.

    nice -n 0 python bench/serving.py [--checkpoint=RUN_DIR] [--finetuned=KEPT_MODEL_DIR] \\
        [--iters=30] [--threads=N] [--sentences=1250] [--tiny] [--keras_graph] [--matmul_floor]

Without --checkpoint, an ELECTRA-Small discriminator with random weights and the BERT vocab
is built (speed does not depend on the values). Shapes: batch x length 1 x 16 and 1 x 128
(latency: median and 99th percentile of --iters calls) and 32 x 128 (sequences/s, a third as
many calls); then the movie dev sentences (data/movie_sentiment/dev.tsv) as single requests and
in batches of 32, each at its own length (ids sides: padded to the batch's longest; text sides:
the strings; a fine-tuned model's sides: its own vocab's ids). Every call of a round is made on
each side in turn, so load changes hit all sides alike; no side busy-waits after a call (ONNX
Runtime without spinning, PyTorch's OpenMP passive), so one side's idle threads do not take the
cores from the next. Logits are checked against the SavedModel's (< 1e-3 over real tokens).
Where the CPU has bfloat16 instructions (AVX512_BF16, AMX), the SavedModel exported with
`--serving_precision=bfloat16` is a side too (its logit difference is reported, not checked).
--matmul_floor adds the model's dense matmuls alone at the fixed shapes: the time below which no
TensorFlow graph of the model can answer (docs/SERVING.md).
Prints the CPU, its flags, the threads per side and `uptime` before and after, one JSON line per
measurement, then a table.
"""

import argparse
import itertools
import json
import os
import statistics
import subprocess
import tempfile
import time

import numpy as np

from electra_tf import data_layout

# PyTorch's OpenMP threads busy-wait after each call unless told not to; in one alternating run
# that spinning takes the cores from the side measured next (set before torch is imported)
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEV = os.path.join(REPO, "data", "movie_sentiment", "dev.tsv")
SPECIAL = {"pad": 0, "cls": 101, "sep": 102, "mask": 103}
TINY = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64)
SHAPES = ((1, 16), (1, 128), (32, 128))
KERAS_GRAPH = "Keras graph (the earlier serving_default)"
MATMUL_FLOOR = "TensorFlow dense matmuls alone"
BFLOAT16 = "SavedModel bfloat16 serving_default"
LOGITS_TOLERANCE = 1e-3


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--checkpoint", help="a pretraining run (default: random ELECTRA-Small)")
    p.add_argument("--finetuned", help="a kept fine-tuned classifier: its SavedModel too")
    p.add_argument("--iters", type=int, default=30, help="timed calls per shape and side")
    p.add_argument("--threads", type=int, default=os.cpu_count(), help="intra-op threads")
    p.add_argument("--sentences", type=int, default=1250, help="movie dev sentences used")
    p.add_argument("--tiny", action="store_true", help="a tiny random model (the test's)")
    p.add_argument(
        "--keras_graph",
        action="store_true",
        help="also the Keras model as one tf.function (what serving_default ran before its "
        "inference graph), at the fixed shapes",
    )
    p.add_argument(
        "--matmul_floor",
        action="store_true",
        help="also the encoder's dense matmuls alone, chained as in the model, as one "
        "tf.function (float32; bfloat16 where the CPU has it; XLA on and off): the time below "
        "which no TensorFlow graph of this model can answer, at the fixed shapes",
    )
    return p.parse_args(argv)


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def random_run(directory: str, tiny: bool) -> str:
    """A pretraining run directory: ELECTRA-Small (or tiny) with random weights, BERT vocab."""
    import tensorflow as tf

    from electra_tf import run_dir, vocab
    from electra_tf.pretraining_config import PretrainingConfig
    from electra_tf.pretraining_networks import build_pretrainer

    bert_vocab = data_layout.vocab_file(os.path.join(REPO, "data", "vocab"))
    size = len(vocab.read_vocab(bert_vocab))
    hp = {"model_size": "small"}
    if tiny:
        hp.update(embedding_size=16, model_hparam_overrides=TINY, generator_hidden_size=0.5)
    config = PretrainingConfig.from_flat("bench", "/nonexistent", hp)
    model = build_pretrainer(config, size, SPECIAL)
    disc, gen = config.model_configs(size)
    os.makedirs(directory, exist_ok=True)
    run_dir.write_run_config(
        os.path.join(directory, "config.json"), run_dir.PRETRAINING, config.to_flat(), disc, gen
    )
    with (
        open(bert_vocab, encoding="utf-8") as src,
        open(data_layout.vocab_file(directory), "w", encoding="utf-8") as f,
    ):
        f.write(src.read())
    tf.train.Checkpoint(model=model).save(os.path.join(directory, data_layout.CHECKPOINT_NAME))
    return directory


def read_dev(n: int) -> tuple[list[str], list[str]]:
    """The first n movie dev sentences and their labels."""
    with open(DEV, encoding="utf-8") as f:
        rows = [line.rstrip("\n").split("\t") for line in f][1 : n + 1]
    return [r[0] for r in rows], [r[1] for r in rows]


class Sides:
    """The runtimes under test; each side maps (ids, mask, seg) or strings to its logits."""

    def __init__(
        self,
        work: str,
        run: str,
        threads: int,
        finetuned: str | None,
        keras_graph: bool,
        matmul_floor: bool = False,
    ):
        import tensorflow as tf
        import tensorflow_text  # noqa: F401  (the SavedModel's tokenizer ops)

        from electra_tf import export
        from electra_tf.checkpoint import load_model
        from electra_tf.export.inference import cpu_has_bfloat16

        self.notes: list[str] = []
        self.finetuned_pack = None
        self.threads = {"tensorflow": f"intra-op {threads}, inter-op 1"}
        loaded = load_model.load_networks(run, None, "discriminator")
        vocab_file = data_layout.vocab_file(run)
        sm = os.path.join(work, "saved_model")
        export.export_saved_model(loaded, "discriminator", sm, vocab_file)
        self.saved = tf.saved_model.load(sm)
        self.export_config = json.load(open(os.path.join(sm, "assets.extra", "export_config.json")))
        self.ids = {"SavedModel serving_default": self._tf_ids(self.saved, "serving_default")}
        if cpu_has_bfloat16():
            bf16 = os.path.join(work, "saved_model_bf16")
            export.export_saved_model(
                loaded, "discriminator", bf16, vocab_file, precision="bfloat16"
            )
            self.ids[BFLOAT16] = self._tf_ids(tf.saved_model.load(bf16), "serving_default")
        else:
            self.notes.append("bfloat16: not measured: this CPU has neither avx512_bf16 nor AMX")
        self.text = {"SavedModel serve_text": self._tf_text(self.saved)}
        self.pair = self.saved.signatures["serve_text_pair"]
        if finetuned:
            from electra_tf.checkpoint import locate

            prefix = locate.resolve_checkpoint(finetuned)
            tuned = export.load_finetuned(prefix, locate.vocab_beside(prefix))
            fsm = os.path.join(work, "finetuned")
            export.export_finetuned_saved_model(tuned, fsm)
            ft = tf.saved_model.load(fsm)
            self.ids["fine-tuned serving_default"] = self._tf_ids(ft, "serving_default", "logits")
            self.text["fine-tuned serve_text"] = self._tf_text(ft, "logits")
            self.finetuned_labels = tuned.tasks[0].export_labels()
            # its own vocab: its sides get ids from its own serve_text, random ids below its size
            self.finetuned_pack = ft.signatures["serve_text"]
            self.finetuned_vocab_size = tuned.model_config.vocab_size
            self._add_finetuned_litert(tuned, work, threads, export)
        self.reference_key = "SavedModel serving_default"
        self.shape_only = {}  # sides measured at the fixed shapes only
        self.unchecked = set()  # sides whose output is no logits
        if keras_graph:
            self.shape_only[KERAS_GRAPH] = self._keras_graph(loaded)
        if matmul_floor:
            precisions = ["float32"] + (["bfloat16"] if cpu_has_bfloat16() else [])
            for precision, jit in itertools.product(precisions, (False, True)):
                name = f"{MATMUL_FLOOR} ({precision}{', XLA' if jit else ''})"
                self.shape_only[name] = self._matmul_floor(loaded, precision, jit)
                self.unchecked.add(name)
        self._add_onnx(loaded, work, threads, export)
        self._add_litert(loaded, work, threads, export)
        self._add_torch(loaded, work, threads, export, vocab_file)

    def _add_litert(self, loaded, work, threads, export):
        """The discriminator's LiteRT file (float32, XNNPACK) as a side."""
        path = export.export_litert(loaded, "discriminator", os.path.join(work, "litert"), None)[0]
        runner = export.litert_interpreter(path, threads).get_signature_runner()
        self.threads["LiteRT (XNNPACK)"] = f"{threads} threads"
        self.ids["LiteRT"] = lambda ids, mask, seg: runner(
            input_ids=ids, input_mask=mask, segment_ids=seg
        )["discriminator_logits"]

    def _add_finetuned_litert(self, tuned, work, threads, export):
        """The fine-tuned classifier's LiteRT files (float32 and dynamic-range int8) as sides."""
        paths = export.export_finetuned_litert(
            tuned, os.path.join(work, "ft_litert"), "dynamic_int8"
        )
        self.threads["LiteRT (XNNPACK)"] = f"{threads} threads"
        for path, name in zip(paths, ("fine-tuned LiteRT", "fine-tuned LiteRT int8")):
            runner = export.litert_interpreter(path, threads).get_signature_runner()
            self.ids[name] = lambda ids, mask, seg, r=runner: r(
                input_ids=ids, input_mask=mask, segment_ids=seg
            )["logits"]
            self.notes.append(f"{name}: {os.path.getsize(path) / 2**20:.1f} MiB")

    @staticmethod
    def _keras_graph(loaded):
        """The Keras encoder and head traced as one tf.function: what `serving_default` ran
        before it had its own inference graph."""
        import tensorflow as tf

        nets = loaded.networks
        encoder, head = nets.discriminator, nets.discriminator_predictions
        spec = [tf.TensorSpec([None, None], tf.int32)] * 3

        @tf.function(input_signature=spec, autograph=False)
        def run(ids, mask, seg):
            seq = encoder(ids, mask, seg, training=False)
            logits = head(seq)
            return {"sequence_output": seq, "discriminator_logits": logits}

        return lambda ids, mask, seg: run(ids, mask, seg)["discriminator_logits"].numpy()

    @staticmethod
    def _matmul_floor(loaded, precision: str, jit: bool):
        """The discriminator's dense matmuls (embedding projection; per layer query/key/value
        fused, attention output, feed-forward in and out; the head's two), each on the previous
        one's output as in the model, and nothing else: no attention, LayerNorm, GELU or bias."""
        import tensorflow as tf

        from electra_tf.export.inference import InferenceEncoder, _var

        nets = loaded.networks
        encoder = InferenceEncoder(nets.discriminator, precision)
        hidden = nets.discriminator.config.hidden_size

        def kernel(dense):
            return encoder.low_kernels.get(dense.path, _var(dense.kernel))

        chain = []  # (kernel, keep the first `hidden` columns of its output)
        if nets.discriminator.embeddings_project is not None:
            chain.append((kernel(nets.discriminator.embeddings_project), False))
        for i, layer in enumerate(nets.discriminator.transformer_layers):
            chain.append((encoder.qkv_kernels[i], True))
            chain += [(kernel(d), False) for d in (layer.attention_output, layer.intermediate)]
            chain.append((kernel(layer.output_dense), False))
        head = nets.discriminator_predictions
        chain += [(_var(head.dense.kernel), False), (_var(head.dense_1.kernel), False)]
        width = chain[0][0].shape[0]
        spec = [tf.TensorSpec([None, None], tf.int32)] * 3

        @tf.function(input_signature=spec, autograph=False, jit_compile=jit)
        def run(ids, mask, seg):
            x = tf.cast(tf.reshape(ids, [-1, 1]), tf.float32) * tf.ones([1, width]) * 1e-5
            for w, first_part in chain:
                x = tf.cast(tf.matmul(tf.cast(x, w.dtype), w), tf.float32)
                if first_part:  # query/key/value: the attention output reads `hidden` columns
                    x = x[:, :hidden]
            return tf.reshape(x, tf.shape(ids))

        return lambda ids, mask, seg: run(ids, mask, seg).numpy()

    @staticmethod
    def _tf_ids(model, name, key="discriminator_logits"):
        import tensorflow as tf

        f = model.signatures[name]
        return lambda ids, mask, seg: f(
            input_ids=tf.constant(ids), input_mask=tf.constant(mask), segment_ids=tf.constant(seg)
        )[key].numpy()

    @staticmethod
    def _tf_text(model, key="discriminator_logits"):
        import tensorflow as tf

        f = model.signatures["serve_text"]
        return lambda texts: f(text=tf.constant(texts))[key].numpy()

    def _add_onnx(self, loaded, work, threads, export):
        try:
            import onnxruntime as ort
        except ImportError:
            self.notes.append("ONNX Runtime: not measured (pip install 'electra_tf[serving]')")
            return
        path = export.export_onnx(loaded, "discriminator", os.path.join(work, "onnx"), None)
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        # no busy-waiting after a call: in one alternating run the other sides need the cores
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
        self.threads[f"onnxruntime {ort.__version__}"] = f"intra-op {threads}, inter-op 1"
        self.ids["ONNX Runtime"] = lambda ids, mask, seg: session.run(
            ["discriminator_logits"], {"input_ids": ids, "input_mask": mask, "segment_ids": seg}
        )[0]

    def _add_torch(self, loaded, work, threads, export, vocab_file):
        try:
            import torch
            import transformers
        except ImportError:
            self.notes.append("PyTorch eager: not measured (torch and transformers not installed)")
            return
        hf = os.path.join(work, "huggingface")
        export.export_huggingface(loaded, "discriminator", hf, vocab_file)
        torch.set_num_threads(threads)
        model = transformers.ElectraForPreTraining.from_pretrained(hf).eval()
        self.threads[f"torch {torch.__version__}"] = f"intra-op {threads}"

        def run(ids, mask, seg):
            with torch.inference_mode():
                t = {
                    k: torch.from_numpy(v.astype(np.int64))
                    for k, v in (("a", ids), ("m", mask), ("s", seg))
                }
                return model(
                    input_ids=t["a"], attention_mask=t["m"], token_type_ids=t["s"]
                ).logits.numpy()

        self.ids["PyTorch eager"] = run


def timed(fn, *args) -> tuple[float, object]:
    start = time.perf_counter()
    out = fn(*args)
    return time.perf_counter() - start, out


def check_logits(name, got, want, mask, mismatches):
    diff = float(np.abs(np.asarray(got) - want)[mask.astype(bool)].max())
    if diff >= LOGITS_TOLERANCE and BFLOAT16 not in name:  # bfloat16's diff: reported only
        mismatches.append(f"{name}: max |logit diff| {diff:.2e}")
    return diff


def bench_shapes(sides: Sides, iters: int, rng, mismatches) -> list[dict]:
    rows = []
    every = {**sides.ids, **sides.shape_only}
    ids_sides = {
        k: v
        for k, v in every.items()
        if not k.startswith("fine-tuned") and k not in sides.unchecked
    }
    for b, n in SHAPES:
        ids = rng.integers(1000, 29000, (b, n)).astype(np.int32)
        mask = np.ones((b, n), np.int32)
        seg = np.zeros((b, n), np.int32)
        want = sides.ids[sides.reference_key](ids, mask, seg)
        times = {name: [] for name in every}
        diffs = {}
        ft_ids = ids if sides.finetuned_pack is None else ids % sides.finetuned_vocab_size
        feeds = {
            name: (ft_ids if name.startswith("fine-tuned") else ids, mask, seg) for name in every
        }
        for name, fn in every.items():  # warm-up (and tracing) call, and the logit check
            out = fn(*feeds[name])
            if name in ids_sides:
                diffs[name] = check_logits(f"{name} {b}x{n}", out, want, mask, mismatches)
        for _ in range(iters if b == 1 else max(2, iters // 3)):  # batch 32: a third
            for name, fn in every.items():
                times[name].append(timed(fn, *feeds[name])[0])
        for name, t in times.items():
            rows.append(summary(f"{b}x{n}", name, b, t, diffs.get(name)))
    return rows


def summary(case, side, batch, times, diff=None) -> dict:
    ms = sorted(1000 * t for t in times)
    p99 = ms[min(len(ms) - 1, int(round(0.99 * (len(ms) - 1))))]
    med = statistics.median(ms)
    row = {"case": case, "side": side, "median_ms": round(med, 2), "p99_ms": round(p99, 2)}
    row["seq_per_s"] = round(1000 * batch / med, 1)
    if diff is not None:
        row["max_logit_diff"] = float(f"{diff:.2e}")
    print(json.dumps(row), flush=True)
    return row


def packed_features(serve_text, sentences: list[str]) -> tuple:
    """(ids, mask, segment ids) as a SavedModel's serve_text packs the sentences."""
    import tensorflow as tf

    packed = serve_text(text=tf.constant(sentences))
    return tuple(packed[k].numpy() for k in ("input_ids", "input_mask", "segment_ids"))


def cut(features: tuple, start: int, end: int) -> tuple:
    """Rows start:end, cut at their longest sequence."""
    n = int(features[1][start:end].sum(1).max())
    return tuple(f[start:end, :n] for f in features)


def bench_sentences(sides: Sides, sentences: list[str], mismatches) -> list[dict]:
    """Each sentence alone, then batches of 32, at their own lengths (ids: the SavedModel's
    own tokenization, cut at the batch's longest)."""

    features = {False: packed_features(sides.saved.signatures["serve_text"], sentences)}
    if sides.finetuned_pack is not None:
        features[True] = packed_features(sides.finetuned_pack, sentences)
    rows = []
    for label, size in (("movie dev, single", 1), ("movie dev, batches of 32", 32)):
        total = {name: 0.0 for name in [*sides.ids, *sides.text]}
        worst = {}
        for start in range(0, len(sentences), size):
            end = start + size
            feeds = {k: cut(f, start, end) for k, f in features.items()}
            texts = np.array(sentences[start:end], dtype=object)
            ref = None
            for name, fn in sides.ids.items():
                feed = feeds[name.startswith("fine-tuned")]
                t, out = timed(fn, *feed)
                total[name] += t
                if name == sides.reference_key:
                    ref = out
                elif not name.startswith("fine-tuned"):
                    d = check_logits(f"{name} {label}", out, ref, feed[1], mismatches)
                    worst[name] = max(worst.get(name, 0.0), d)
            for name, fn in sides.text.items():
                total[name] += timed(fn, texts)[0]
        for name, t in total.items():
            row = {"case": label, "side": name, "sentences": len(sentences)}
            row["ms_per_request"] = round(1000 * t / -(-len(sentences) // size), 2)
            row["sentences_per_s"] = round(len(sentences) / t, 1)
            if name in worst:
                row["max_logit_diff"] = float(f"{worst[name]:.2e}")
            print(json.dumps(row), flush=True)
            rows.append(row)
    return rows


def finetuned_accuracy(sides: Sides, sentences: list[str], labels: list[str]) -> list[dict]:
    """Accuracy on the movie dev sentences of each fine-tuned ids side (batches of 32 at their
    own lengths): the SavedModel's and its LiteRT files' (float32, dynamic-range int8)."""
    features = packed_features(sides.finetuned_pack, sentences)
    names = [n for n in sides.ids if n.startswith("fine-tuned")]
    label_strings = np.array(sides.finetuned_labels)
    right = dict.fromkeys(names, 0)
    agree = dict.fromkeys(names, 0)
    for start in range(0, len(sentences), 32):
        feed = cut(features, start, start + 32)
        gold = np.array(labels[start : start + 32])
        reference = None
        for name in names:
            predicted = np.asarray(sides.ids[name](*feed)).argmax(-1)
            reference = predicted if reference is None else reference
            right[name] += int((label_strings[predicted] == gold).sum())
            agree[name] += int((predicted == reference).sum())
    rows = []
    for name in names:
        row = {"case": "movie dev accuracy", "side": name, "sentences": len(sentences),
               "accuracy": round(100.0 * right[name] / len(sentences), 2),
               "same_label_as_saved_model": agree[name]}  # fmt: skip
        print(json.dumps(row), flush=True)
        rows.append(row)
    return rows


def main(argv=None) -> int:
    args = parse_args(argv)
    from electra_tf.train.devices import cpu_info

    cpu, flags = cpu_info()
    wanted = ("avx2", "avx512f", "avx512_bf16", "amx_bf16", "amx_tile")
    print(
        f"CPU: {cpu}; flags: {' '.join(f for f in wanted if f in flags) or 'none of'} "
        f"(of {', '.join(wanted)}); {os.cpu_count()} logical CPUs"
    )
    print(f"uptime before: {uptime()}", flush=True)
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    with tempfile.TemporaryDirectory() as work:
        run = args.checkpoint or random_run(os.path.join(work, "run"), args.tiny)
        sides = Sides(work, run, args.threads, args.finetuned, args.keras_graph, args.matmul_floor)
        print(f"tensorflow {tf.__version__}; threads per side: {json.dumps(sides.threads)}")
        print(f"SavedModel export_config: {json.dumps(sides.export_config)}")
        for note in sides.notes:
            print(note)
        mismatches: list[str] = []
        rows = bench_shapes(sides, args.iters, np.random.default_rng(0), mismatches)
        texts, labels = read_dev(args.sentences)
        a, b = tf.constant(texts[:32]), tf.constant((texts[1:] + texts[:1])[:32])
        sides.pair(text_a=a, text_b=b)  # warm-up
        t = [
            timed(lambda: sides.pair(text_a=a, text_b=b))[0] for _ in range(max(3, args.iters // 4))
        ]
        rows.append(summary("32 pairs (movie dev)", "SavedModel serve_text_pair", 32, t))
        rows += bench_sentences(sides, texts, mismatches)
        if args.finetuned:
            rows += finetuned_accuracy(sides, texts, labels)
    print(f"uptime after: {uptime()}")
    print_table(rows)
    if mismatches:
        print("LOGITS DIFFER: " + "; ".join(mismatches))
        return 1
    print(f"logits match the SavedModel's (< {LOGITS_TOLERANCE:g}) on every side and case")
    return 0


def print_table(rows: list[dict]) -> None:
    print("\n| case | side | median ms | p99 ms | sequences/s |")
    print("|---|---|---|---|---|")
    for r in rows:
        if "accuracy" in r:
            agree = (
                f"{r['same_label_as_saved_model']} of {r['sentences']} labels as the SavedModel's"
            )
            print(f"| {r['case']} | {r['side']} | {r['accuracy']}% | {agree} | - |")
            continue
        if "median_ms" in r:
            cells = (r["median_ms"], r["p99_ms"], r["seq_per_s"])
        else:
            cells = (f"{r['ms_per_request']} (mean)", "-", r["sentences_per_s"])
        print(f"| {r['case']} | {r['side']} | " + " | ".join(str(c) for c in cells) + " |")


if __name__ == "__main__":
    raise SystemExit(main())
