"""ONNX and LiteRT exports (`export_model.py --format=onnx|litert`): on real movie-review text,
the ids the SavedModel's `serve_text` packs, fed to ONNX Runtime (in a process that imports
neither TensorFlow nor PyTorch nor transformers) and to the LiteRT interpreter, give the
SavedModel's outputs within 1e-4."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_text  # noqa: F401  (the SavedModel's tokenizer ops)
from harness import BERT_VOCAB, REPO, SPECIAL, TINY

from electra_tf import export, run_dir, vocab
from electra_tf.checkpoint import load_model
from electra_tf.errors import UserError
from electra_tf.export.common import require_optional
from electra_tf.pretraining_config import PretrainingConfig
from electra_tf.pretraining_networks import build_pretrainer

TOLERANCE = 1e-4
MAX_LEN = 64


def movie_sentences(n: int) -> list[str]:
    with open(os.path.join(REPO, "data", "movie_sentiment", "dev.tsv"), encoding="utf-8") as f:
        rows = [line.rstrip("\n").split("\t")[0] for line in f][1:]
    return rows[:n]


@pytest.fixture(scope="module")
def bert_run(tmp_path_factory):
    """A tiny pretraining run with the BERT vocab (so that real text gives real ids) and every
    weight random."""
    d = str(tmp_path_factory.mktemp("bert_run"))
    size = len(vocab.read_vocab(BERT_VOCAB))
    config = PretrainingConfig.from_flat("t", "/nonexistent", dict(TINY, max_seq_length=MAX_LEN))
    model = build_pretrainer(config, size, SPECIAL)
    rng = np.random.default_rng(4)
    for v in {id(w): w for w in model.weights}.values():
        v.assign(rng.normal(0, 0.1, v.shape).astype(np.float32) + ("gamma" in v.path))
    disc, gen = config.model_configs(size)
    run_dir.write_run_config(
        os.path.join(d, "config.json"), run_dir.PRETRAINING, config.to_flat(), disc, gen
    )
    with open(BERT_VOCAB, encoding="utf-8") as src, open(os.path.join(d, "vocab.txt"), "w") as f:
        f.write(src.read())
    tf.train.Checkpoint(model=model).save(os.path.join(d, "ckpt"))
    return d


@pytest.fixture(scope="module")
def reference(bert_run, tmp_path_factory):
    """The discriminator SavedModel's serve_text on 48 movie sentences: its ids and outputs."""
    out = str(tmp_path_factory.mktemp("saved") / "sm")
    loaded = load_model.load_networks(bert_run, None, "discriminator")
    vocab_file = os.path.join(bert_run, "vocab.txt")
    export.export_saved_model(loaded, "discriminator", out, vocab_file, MAX_LEN)
    served = tf.saved_model.load(out).signatures["serve_text"](
        text=tf.constant(movie_sentences(48))
    )
    longest = int(served["input_mask"].numpy().sum(1).max())  # what the model ran on
    assert longest < MAX_LEN
    got = {k: v.numpy()[:, :longest] for k, v in served.items()}
    assert got["input_mask"].sum(1).min() > 4  # real words, not [UNK]s only
    assert (got["input_ids"] == 100).mean() < 0.05  # [UNK] is 100 in BERT's vocab
    return got


ORT_RUNNER = """
import json, sys
import numpy as np
import onnxruntime as ort
inp = np.load(sys.argv[2])
options = ort.SessionOptions()
options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
s = ort.InferenceSession(sys.argv[1], options, providers=["CPUExecutionProvider"])
out = s.run(None, {k: inp[k] for k in ("input_ids", "input_mask", "segment_ids")})
np.savez(sys.argv[3], **dict(zip([o.name for o in s.get_outputs()], out)))
heavy = [m for m in ("tensorflow", "torch", "transformers") if m in sys.modules]
print(json.dumps({"heavy": heavy, "inputs": [i.name for i in s.get_inputs()]}))
"""


def test_onnx_matches_the_saved_model_on_real_text(bert_run, reference, tmp_path):
    pytest.importorskip("onnxruntime", reason="onnxruntime not installed (the [serving] extra)")
    pytest.importorskip("onnx", reason="onnx not installed (the [serving] extra)")
    loaded = load_model.load_networks(bert_run, None, "discriminator")
    vocab_file = os.path.join(bert_run, "vocab.txt")
    path = export.export_onnx(loaded, "discriminator", str(tmp_path / "onnx"), vocab_file)
    np.savez(
        tmp_path / "in.npz", **{k: reference[k] for k in ("input_ids", "input_mask", "segment_ids")}
    )
    (tmp_path / "runner.py").write_text(ORT_RUNNER)
    proc = subprocess.run(
        [sys.executable, "runner.py", path, "in.npz", "out.npz"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    info = json.loads(proc.stdout.strip().splitlines()[-1])
    assert info == {"heavy": [], "inputs": ["input_ids", "input_mask", "segment_ids"]}
    got = dict(np.load(tmp_path / "out.npz"))
    for key in ("sequence_output", "discriminator_logits", "discriminator_probabilities"):
        diff = np.abs(got[key] - reference[key]).max()
        print(f"ONNX Runtime vs SavedModel {key}: max |diff| {diff:.2e}")
        assert got[key].shape == reference[key].shape and diff < TOLERANCE, key
    extra = json.load(open(tmp_path / "onnx" / "export_config.json"))
    assert extra["outputs"] == [
        "sequence_output",
        "discriminator_logits",
        "discriminator_probabilities",
    ]
    assert open(tmp_path / "onnx" / "vocab.txt").read() == open(vocab_file).read()


def test_onnx_generator_and_encoder_match_keras(bert_run, tmp_path):
    ort = pytest.importorskip(
        "onnxruntime", reason="onnxruntime not installed (the [serving] extra)"
    )
    pytest.importorskip("onnx", reason="onnx not installed (the [serving] extra)")
    loaded = load_model.load_networks(bert_run, None, "generator")
    rng = np.random.default_rng(0)
    ids = rng.integers(1000, 3000, (2, 9)).astype(np.int32)
    mask = np.array([[1] * 9, [1] * 5 + [0] * 4], np.int32)
    seg = np.array([[0] * 5 + [1] * 4, [0] * 9], np.int32)
    feed = {"input_ids": ids, "input_mask": mask, "segment_ids": seg}
    for head, key in (("generator", "mlm_logits"), ("encoder", "sequence_output")):
        path = export.export_onnx(loaded, head, str(tmp_path / head), None)
        session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        got = dict(zip([o.name for o in session.get_outputs()], session.run(None, feed)))
        encoder, layer = export.pretrained.network_and_head(loaded, head)
        want = encoder(ids, mask, seg, training=False)
        want = layer(want) if layer is not None else want
        assert got[key].shape == tuple(want.shape)
        assert np.abs(got[key] - want.numpy()).max() < TOLERANCE, head


@pytest.mark.slow
def test_litert_cli_matches_the_saved_model_and_quantizes(bert_run, reference, tmp_path):
    out = tmp_path / "litert"
    proc = subprocess.run(
        [
            sys.executable,
            os.path.join(REPO, "export_model.py"),
            f"--checkpoint={bert_run}",
            f"--export_dir={out}",
            "--format=litert",
            "--quantize=dynamic_int8",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    feed = {k: reference[k] for k in ("input_ids", "input_mask", "segment_ids")}
    results = {}
    for name in ("model.tflite", "model_dynamic_int8.tflite"):
        interpreter = export.litert_interpreter(str(out / name))
        assert list(interpreter.get_signature_list()) == ["serving_default"]
        results[name] = interpreter.get_signature_runner()(**feed)
        ops = {d["op_name"] for d in interpreter._get_ops_details()}
        assert not any(op.startswith("Flex") for op in ops), ops  # builtins only
    got = results["model.tflite"]
    for key in ("sequence_output", "discriminator_logits"):
        diff = np.abs(got[key] - reference[key]).max()
        print(f"LiteRT vs SavedModel {key}: max |diff| {diff:.2e}")
        assert diff < TOLERANCE, key
    # int8 weights: a smaller file, logits close but not identical
    q = results["model_dynamic_int8.tflite"]["discriminator_logits"]
    real = reference["input_mask"] == 1
    q_diff = np.abs(q - reference["discriminator_logits"])[real]
    print(f"dynamic int8 vs SavedModel logits: max |diff| {q_diff.max():.3f}")
    assert 0 < q_diff.max() < 0.5
    assert os.path.getsize(out / "model_dynamic_int8.tflite") < os.path.getsize(
        out / "model.tflite"
    )
    assert json.load(open(out / "export_config.json"))["files"] == {
        "model.tflite": "none",
        "model_dynamic_int8.tflite": "dynamic_int8",
    }


def test_missing_optional_dependency_is_one_line_naming_the_extra():
    with pytest.raises(
        UserError,
        match=r"^--format=onnx needs the no_such_pkg_x package: "
        r"pip install 'electra_tf\[serving\]'$",
    ):
        require_optional("no_such_pkg_x", "--format=onnx")


def export_cli(*args):
    return subprocess.run(
        [sys.executable, os.path.join(REPO, "export_model.py"), *args],
        cwd=REPO,
        capture_output=True,
        text=True,
    )


@pytest.mark.slow
def test_cli_writes_onnx_and_refuses_quantize_elsewhere(bert_run, tmp_path):
    ort = pytest.importorskip(
        "onnxruntime", reason="onnxruntime not installed (the [serving] extra)"
    )
    pytest.importorskip("onnx", reason="onnx not installed (the [serving] extra)")
    out = tmp_path / "onnx"
    proc = export_cli(f"--checkpoint={bert_run}", f"--export_dir={out}", "--format=onnx")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert f"wrote the discriminator as {out / 'model.onnx'}" in proc.stdout
    session = ort.InferenceSession(str(out / "model.onnx"), providers=["CPUExecutionProvider"])
    assert [o.name for o in session.get_outputs()] == [
        "sequence_output",
        "discriminator_logits",
        "discriminator_probabilities",
    ]
    bad = tmp_path / "bad"
    proc = export_cli(
        f"--checkpoint={bert_run}",
        f"--export_dir={bad}",
        "--format=onnx",
        "--quantize=dynamic_int8",
    )
    assert proc.returncode == 1 and not bad.exists()
    assert proc.stderr.strip().splitlines()[-1] == (
        "error: --quantize applies to --format=litert only"
    )
