"""Export: the original checkpoint layout round trip, the SavedModel's signatures (loaded in a
process that imports only tensorflow and tensorflow_text), and export_model.py's errors."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf
from test_checkpoints import SPECIAL, V, original_names, write_run

from electra_tf import export
from electra_tf.checkpoint import load_model
from electra_tf.errors import UserError
from electra_tf.export.inference import cpu_has_bfloat16, pick_precision
from electra_tf.export.pretrained import IdsServingModule
from electra_tf.packing import truncate_pair
from electra_tf.tokenization import FullTokenizer, GraphTokenizer

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MAX_LEN = 12
TEXTS = ["Hello, world!", "The cat sat on the mat.", "", "the dogs ran jumping playing " * 3]
PAIRS_B = ["A dog.", "the the the the the the the the", "Unwanted?", "x"]
FEATURES = ("input_ids", "input_mask", "segment_ids")


def batch(seed=0, b=3, length=10):
    rng = np.random.default_rng(seed)
    ids = rng.integers(5, V, (b, length)).astype(np.int32)
    mask = (np.arange(length)[None] < rng.integers(3, length + 1, (b, 1))).astype(np.int32)
    seg = (np.arange(length)[None] >= length // 2).astype(np.int32) * mask
    return ids * mask, mask, seg


def keras_outputs(model, ids, mask, seg):
    d = model.discriminator(ids, mask, seg, training=False)
    g = model.generator(ids, mask, seg, training=False)
    return {
        "sequence_output": d.numpy(),
        "discriminator_logits": model.discriminator_predictions(d).numpy(),
        "mlm_logits": model.generator_predictions(g).numpy(),
    }


def pack(tok, a, b=None, n=MAX_LEN):
    """The reference packing: BERT's [CLS] a [SEP] (b [SEP]), the original's truncation."""
    ia = tok.tokenize_to_ids([a])[0]
    ib = tok.tokenize_to_ids([b])[0] if b is not None else []
    if b is None:
        ia = ia[: n - 2]
    else:
        truncate_pair(ia, ib, n - 3)
    ids = (
        [SPECIAL["cls"]] + ia + [SPECIAL["sep"]] + (ib + [SPECIAL["sep"]] if b is not None else [])
    )
    seg = [0] * (len(ia) + 2) + [1] * (len(ids) - len(ia) - 2)
    pad = n - len(ids)
    return ids + [0] * pad, [1] * len(ids) + [0] * pad, seg + [0] * pad


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    d = str(tmp_path_factory.mktemp("run"))
    model, prefix = write_run(d)
    return d, model, prefix


def test_original_layout_round_trip(run, tmp_path):
    run_dir, model, _ = run
    loaded = load_model.load_networks(run_dir)
    assert loaded.parts == load_model.PARTS and loaded.step == 7
    out = str(tmp_path / "original")
    written = export.export_original_checkpoint(loaded, out, os.path.join(run_dir, "vocab.txt"))
    # what a tool built for the released checkpoints sees (HF's converter lists names this way)
    listed = dict(tf.train.list_variables(out))
    expected = {**original_names(), "global_step": []}
    assert listed == expected and sorted(written) == sorted(expected)
    assert int(tf.train.load_variable(out, "global_step")) == 7
    assert json.load(open(os.path.join(out, "bert_config.json")))["hidden_size"] == 32
    assert json.load(open(os.path.join(out, "generator_config.json")))["hidden_size"] == 24
    assert open(os.path.join(out, "vocab.txt")).read() == open(f"{run_dir}/vocab.txt").read()
    # and back: the original layout -> this project's networks, identical outputs
    back = load_model.load_networks(out)
    assert back.report.format == "original" and back.report.missing == []
    ids, mask, seg = batch()
    want = keras_outputs(model, ids, mask, seg)
    n = back.networks
    d = n.discriminator(ids, mask, seg)
    g = n.generator(ids, mask, seg)
    np.testing.assert_array_equal(d.numpy(), want["sequence_output"])
    np.testing.assert_array_equal(
        n.discriminator_predictions(d).numpy(), want["discriminator_logits"]
    )
    np.testing.assert_array_equal(n.generator_predictions(g).numpy(), want["mlm_logits"])
    with pytest.raises(UserError, match="not empty"):
        export.export_original_checkpoint(loaded, out)


LOADER = """
import json, sys
import numpy as np
import tensorflow as tf
import tensorflow_text  # noqa: F401  (the text signatures' ops)
m = tf.saved_model.load(sys.argv[1])
inp = np.load(sys.argv[2])
out = {}
f = m.signatures["serving_default"]
for k, v in f(**{k: tf.constant(inp[k]) for k in ("input_ids", "input_mask", "segment_ids")}).items():
    out["ids_" + k] = v.numpy()
texts = json.loads(sys.argv[3])
for k, v in m.signatures["serve_text"](text=tf.constant(texts["a"])).items():
    out["text_" + k] = v.numpy()
pair = m.signatures["serve_text_pair"](text_a=tf.constant(texts["a"]), text_b=tf.constant(texts["b"]))
for k, v in pair.items():
    out["pair_" + k] = v.numpy()
assert not any(name.startswith("electra_tf") for name in sys.modules), "imported electra_tf"
np.savez(sys.argv[4], **out)
print(sorted(m.signatures))
"""


@pytest.mark.slow
def test_saved_model_signatures_match_keras_and_the_tokenizer(run, tmp_path):
    run_dir, model, prefix = run
    loaded = load_model.load_networks(prefix, None, "discriminator")
    out = str(tmp_path / "saved")
    vocab = os.path.join(run_dir, "vocab.txt")
    export.export_saved_model(loaded, "discriminator", out, vocab, max_seq_length=MAX_LEN)
    ids, mask, seg = batch(seed=3, b=3, length=10)
    np.savez(tmp_path / "in.npz", input_ids=ids, input_mask=mask, segment_ids=seg)
    (tmp_path / "loader.py").write_text(LOADER)
    texts = json.dumps({"a": TEXTS, "b": PAIRS_B})
    res = str(tmp_path / "res.npz")
    proc = subprocess.run(
        [sys.executable, "loader.py", out, "in.npz", texts, res],
        cwd=tmp_path,  # nothing of this repo importable
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "['serve_text', 'serve_text_pair', 'serving_default']" in proc.stdout
    got = dict(np.load(res))

    want = keras_outputs(model, ids, mask, seg)
    diff_seq = np.abs(got["ids_sequence_output"] - want["sequence_output"]).max()
    diff_logits = np.abs(got["ids_discriminator_logits"] - want["discriminator_logits"]).max()
    print(
        f"SavedModel vs Keras max abs difference: sequence {diff_seq:.2e}, logits {diff_logits:.2e}"
    )
    assert got["ids_sequence_output"].shape == (3, 10, 32) and diff_seq < 1e-5
    assert got["ids_discriminator_logits"].shape == (3, 10) and diff_logits < 1e-5
    probs = 1 / (1 + np.exp(-want["discriminator_logits"]))
    np.testing.assert_allclose(got["ids_discriminator_probabilities"], probs, atol=1e-5)

    tok = FullTokenizer(vocab)
    for prefix_, b_texts in (("text_", None), ("pair_", PAIRS_B)):
        ref = [pack(tok, a, b_texts[i] if b_texts else None) for i, a in enumerate(TEXTS)]
        for j, key in enumerate(("input_ids", "input_mask", "segment_ids")):
            np.testing.assert_array_equal(got[prefix_ + key], [r[j] for r in ref], err_msg=key)
        w = keras_outputs(model, *(np.array([r[j] for r in ref], np.int32) for j in range(3)))
        np.testing.assert_allclose(
            got[prefix_ + "discriminator_logits"], w["discriminator_logits"], atol=1e-5
        )
    # the long text and pair were truncated, the longer segment first
    assert got["text_input_mask"][3].sum() == MAX_LEN
    assert got["pair_segment_ids"][1].sum() == 5  # a 7 -> 5 ids, b 8 -> 4 ids + [SEP]


def test_generator_head_serves_logits_at_every_position(run, tmp_path):
    run_dir, model, prefix = run
    loaded = load_model.load_networks(run_dir, os.path.join(run_dir, "config.json"), "generator")
    assert loaded.parts == ("generator", "generator_predictions")
    nets = loaded.networks
    module = export.ServingModule(nets.generator, nets.generator_predictions, None, 8, SPECIAL)
    ids, mask, seg = batch(seed=5)
    out = module.serve(tf.constant(ids), tf.constant(mask), tf.constant(seg))
    assert out["mlm_logits"].shape == (3, 10, V)
    np.testing.assert_allclose(
        out["mlm_logits"].numpy(), keras_outputs(model, ids, mask, seg)["mlm_logits"], atol=1e-5
    )


def cli(*args, cwd=REPO):
    return subprocess.run(
        [sys.executable, os.path.join(REPO, "export_model.py"), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
    )


@pytest.mark.slow
def test_cli_exports_original_layout_and_refuses_to_overwrite(run, tmp_path):
    run_dir, _, _ = run
    out = tmp_path / "orig"
    proc = cli(f"--checkpoint={run_dir}", f"--export_dir={out}", "--format=original_checkpoint")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "skipped 3 checkpoint entries" in proc.stdout
    assert tf.train.load_variable(str(out), "generator_predictions/output_bias").shape == (V,)
    # refuses to overwrite: one line, exit status 1 (the other errors: test_checkpoints.py)
    proc = cli(f"--checkpoint={run_dir}", f"--export_dir={out}")
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines()[-1] == (
        f"error: {out}: the export directory is not empty; choose a new one"
    )


def test_text_signatures_compute_only_the_batchs_longest_sequence(run):
    run_dir, model, _ = run
    loaded = load_model.load_networks(run_dir, None, "discriminator")
    nets = loaded.networks
    vocab = os.path.join(run_dir, "vocab.txt")
    tok = GraphTokenizer(vocab)
    module = export.ServingModule(
        nets.discriminator, nets.discriminator_predictions, tok, MAX_LEN, SPECIAL
    )
    short = ["Hello, world!", "The cat sat."]  # 6 and 6 ids with [CLS] [SEP]: 6 of 12 computed
    out = {k: v.numpy() for k, v in module.serve_text(tf.constant(short)).items()}
    ref = [pack(FullTokenizer(vocab), a) for a in short]
    for j, key in enumerate(FEATURES):  # the features keep their max_seq_length padding
        np.testing.assert_array_equal(out[key], [r[j] for r in ref], err_msg=key)
    longest = int(out["input_mask"].sum(1).max())
    assert longest == 6
    want = keras_outputs(model, *(np.array([r[j] for r in ref], np.int32) for j in range(3)))
    for key in ("sequence_output", "discriminator_logits"):
        assert out[key].shape == want[key].shape
        assert np.abs(out[key][:, :longest] - want[key][:, :longest]).max() < 1e-5, key
        assert not out[key][:, longest:].any(), key  # not computed: zeros


def test_bfloat16_serving_runs_the_dense_matmuls_in_bfloat16(run, tmp_path):
    run_dir, model, _ = run
    loaded = load_model.load_networks(run_dir, None, "discriminator")
    nets = loaded.networks
    module = IdsServingModule(
        nets.discriminator, nets.discriminator_predictions, precision="bfloat16"
    )
    ids, mask, seg = batch(seed=7)
    out = module.serve(tf.constant(ids), tf.constant(mask), tf.constant(seg))
    want = keras_outputs(model, ids, mask, seg)
    real = mask.astype(bool)
    diff = np.abs(out["sequence_output"].numpy() - want["sequence_output"])[real].max()
    print(f"bfloat16 serving vs the float32 Keras model: sequence_output max |diff| {diff:.2e}")
    # bfloat16 keeps 8 significant bits: the outputs move (far beyond float32's 1e-6), not far
    assert 1e-4 < diff < 0.1
    assert out["sequence_output"].dtype == tf.float32
    graph = module.serve.get_concrete_function().graph.as_graph_def()
    ops = [n for f in graph.library.function for n in f.node_def] + list(graph.node)
    low = [n for n in ops if n.op == "MatMul" and n.attr["T"].type == tf.bfloat16.as_datatype_enum]
    layers = nets.discriminator.config.num_hidden_layers
    project = int(nets.discriminator.embeddings_project is not None)
    # per layer: query/key/value, attention output, intermediate, output; and the projection
    assert len(low) == 4 * layers + project
    export.export_saved_model(
        loaded, "discriminator", str(tmp_path / "sm"), None, precision="bfloat16"
    )
    config = json.load(open(tmp_path / "sm" / "assets.extra" / "export_config.json"))
    assert config["serving"]["precision"] == "bfloat16"
    with pytest.raises(UserError, match="serving precision 'float16'"):
        IdsServingModule(nets.discriminator, None, precision="float16")


def test_auto_precision_rule_by_hand():
    # MIN_GAIN = 0.03: bfloat16 must take <= 97% of float32's batch time and <= 103% of its
    # single-request time
    f32 = {"single": 10.0, "batch": 100.0}
    assert pick_precision({"float32": f32})[0] == "float32"  # no bfloat16 instructions
    assert pick_precision({"float32": f32, "bfloat16": {"single": 10.3, "batch": 97.0}})[0] == (
        "bfloat16"
    )
    assert pick_precision({"float32": f32, "bfloat16": {"single": 10.0, "batch": 97.1}})[0] == (
        "float32"
    )  # not faster enough on the batch
    assert pick_precision({"float32": f32, "bfloat16": {"single": 10.4, "batch": 50.0}})[0] == (
        "float32"
    )  # a slower single request


def test_auto_precision_export_measures_and_records(run, tmp_path):
    run_dir, model, _ = run
    loaded = load_model.load_networks(run_dir, None, "discriminator")
    module = export.export_saved_model(
        loaded, "discriminator", str(tmp_path / "sm"), None, 16, precision="auto"
    )
    serving = json.load(open(tmp_path / "sm" / "assets.extra" / "export_config.json"))["serving"]
    chosen = module.inference.precision
    assert serving["precision"] == chosen in ("float32", "bfloat16")
    record = serving["precision_auto"]
    measured = {"float32", "bfloat16"} if cpu_has_bfloat16() else {"float32"}
    assert set(record["median_ms"]) == measured
    for times in record["median_ms"].values():
        assert set(times) == {"single (1 x 16)", "batch (32 x 16)"}
        assert all(t > 0 for t in times.values())
    # the recorded times give the recorded choice
    as_seconds = {
        p: {k.split(" ")[0]: v for k, v in times.items()}
        for p, times in record["median_ms"].items()
    }
    assert pick_precision(as_seconds)[0] == chosen
