"""Export: the original checkpoint layout round trip, the SavedModel's signatures (loaded in a
process that imports only tensorflow and tensorflow_text), and export_model.py's errors."""

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf
from test_checkpoints import SPECIAL, VOCAB, V, original_names, write_run

from electra_tf import export, loading
from electra_tf.errors import UserError
from electra_tf.packing import truncate_pair
from electra_tf.tokenization import FullTokenizer

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
    loaded = loading.load_networks(run_dir)
    assert loaded.parts == loading.PARTS and loaded.step == 7
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
    back = loading.load_networks(out)
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
    loaded = loading.load_networks(prefix, None, "discriminator")
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
    loaded = loading.load_networks(run_dir, os.path.join(run_dir, "config.json"), "generator")
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


# -- fine-tuned models ------------------------------------------------------------------------------

FT_VOCAB = VOCAB + ["who", "what", "where", "in", "park", "is", "was", "with", "sits", "##it"]
FT_LEN, QUERY_LEN, BEAM = 24, 6, 4
CONTEXTS = ["The cat sat on the mat.", "", "The Cat was in the park, playing with a dog. " * 3]
QUESTIONS = ["who sat?", "what is it, what was it, what?", "Where is the cat?"]


def write_finetuned(data_dir: str, tasks: list, seed: int = 0, legacy: bool = False):
    """A fine-tuned model's directory as run_finetuning.py (keep_all_models) writes it (`legacy`:
    as it wrote it before the config.json had a `kind`), every weight random. Returns (model, its
    Task objects, the directory)."""
    from electra_tf.finetune.config import FinetuningConfig
    from electra_tf.finetune.features import full_spec
    from electra_tf.finetune.model import build_model
    from electra_tf.finetune.registry import get_tasks
    from electra_tf.finetune.runner import keep_model
    from electra_tf.model_config import ModelConfig

    os.makedirs(data_dir, exist_ok=True)
    vocab = os.path.join(data_dir, "vocab.txt")
    with open(vocab, "w") as f:
        f.write("\n".join(FT_VOCAB) + "\n")
    chunk_dir = os.path.join(data_dir, "finetuning_data", "chunk")
    os.makedirs(chunk_dir, exist_ok=True)
    with open(os.path.join(chunk_dir, "train.txt"), "w") as f:
        f.write("the DT B-NP\ncat NN I-NP\nsat VBD B-VP\n. . O\n\n")
    mc = ModelConfig(
        vocab_size=len(FT_VOCAB) + 3,
        embedding_size=16,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
    )
    config = FinetuningConfig(
        "tiny",
        data_dir,
        task_names=tasks,
        max_seq_length=FT_LEN,
        beam_size=BEAM,
        max_query_length=QUERY_LEN,
        vocab_file=vocab,
    )
    task_objs = get_tasks(config, FullTokenizer(vocab))
    spec = full_spec(task_objs, FT_LEN)
    dummy = {k: tf.zeros((1,) + shape, dtype) for k, (shape, dtype) in spec.items()}
    model, _ = build_model(mc, [t.make_head() for t in task_objs], dummy)
    rng = np.random.default_rng(seed)
    for w in model.weights:  # biases too: no test passes by initial values
        w.assign(rng.normal(0, 0.3, w.shape).astype(np.float32))
    if not legacy:
        return model, task_objs, keep_model(config, model, mc, trial=1)
    # as run_finetuning.py wrote it before config.json recorded its kind
    model_dir = os.path.join(config.pretrained_model_dir, "finetuning_models", "_".join(tasks))
    tf.train.Checkpoint(model=model).write(os.path.join(model_dir, "ckpt"))
    run = {**config.to_dict(), "model_config": mc.to_dict(), "task_names": tasks}
    with open(os.path.join(model_dir, "config.json"), "w") as f:
        json.dump(run, f)
    shutil.copyfile(vocab, os.path.join(model_dir, "vocab.txt"))
    return model, task_objs, model_dir


def complete(feats: dict, tasks: list) -> dict:
    """Zeros for the tasks' own features (labels, ids) that the Keras heads read."""
    n = len(feats["input_ids"])
    out = dict(feats)
    for t in tasks:
        for k, (shape, dtype) in t.feature_spec().items():
            out.setdefault(k, np.zeros((n, *shape), dtype))
    return out


FT_LOADER = """
import json, sys
import numpy as np
import tensorflow as tf
import tensorflow_text  # noqa: F401
m = tf.saved_model.load(sys.argv[1])
t = json.loads(sys.argv[2])
out = {}
def keep(prefix, res):
    out.update({prefix + k: v.numpy() for k, v in res.items()})
keep("text_", m.signatures["serve_text"](text=tf.constant(t["a"])))
keep("pair_", m.signatures["serve_text_pair_sst"](text_a=tf.constant(t["a"]), text_b=tf.constant(t["b"])))
keep("qa_", m.signatures["serve_qa"](question=tf.constant(t["q"]), context=tf.constant(t["c"])))
keep("ids_", m.signatures["serving_default"](
    input_ids=tf.constant(out["text_input_ids"]), input_mask=tf.constant(out["text_input_mask"]),
    segment_ids=tf.constant(out["text_segment_ids"])))
assert not any(name.startswith("electra_tf") for name in sys.modules), "imported electra_tf"
np.savez(sys.argv[3], **out)
print(sorted(m.signatures))
"""


@pytest.mark.slow
def test_finetuned_classification_and_qa_saved_model(tmp_path):
    model, tasks, model_dir = write_finetuned(str(tmp_path / "data"), ["sst", "squad"])
    assert json.load(open(os.path.join(model_dir, "config.json")))["kind"] == "finetuning"
    out = tmp_path / "saved"
    proc = cli(f"--checkpoint={model_dir}", f"--export_dir={out}")
    assert proc.returncode == 0, proc.stderr[-3000:]
    (tmp_path / "loader.py").write_text(FT_LOADER)
    texts = {"a": TEXTS, "b": PAIRS_B, "q": QUESTIONS, "c": CONTEXTS}
    proc = subprocess.run(
        [sys.executable, "loader.py", str(out), json.dumps(texts), "res.npz"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    sigs = "serve_qa serve_qa_squad serve_squad serve_sst serve_text serve_text_pair"
    assert proc.stdout.strip().splitlines()[-1] == str(
        sorted([*sigs.split(), "serve_text_pair_sst", "serve_text_sst", "serving_default"])
    )
    got = dict(np.load(tmp_path / "res.npz", allow_pickle=True))
    tok = FullTokenizer(os.path.join(model_dir, "vocab.txt"))
    special = {k: FT_VOCAB.index(t) for k, t in (("cls", "[CLS]"), ("sep", "[SEP]"))}
    assert special == {"cls": SPECIAL["cls"], "sep": SPECIAL["sep"]}

    # classification: the Keras model on the reference packing
    labels = np.array(tasks[0].label_list)
    for prefix, b_texts in (("text_", None), ("pair_", PAIRS_B)):
        ref = [pack(tok, a, b_texts[i] if b_texts else None, FT_LEN) for i, a in enumerate(TEXTS)]
        feats = {k: np.array([r[j] for r in ref], np.int32) for j, k in enumerate(FEATURES)}
        for k in FEATURES:
            np.testing.assert_array_equal(got[prefix + k], feats[k], err_msg=k)
        want = model.predict_task(complete(feats, tasks), "sst")["logits"].numpy()
        diff = np.abs(got[prefix + "logits"] - want).max()
        print(f"fine-tuned sst SavedModel vs Keras: logits max abs difference {diff:.2e}")
        assert got[prefix + "logits"].shape == (len(TEXTS), 2) and diff < 1e-5
        e = np.exp(want - want.max(-1, keepdims=True))
        np.testing.assert_allclose(
            got[prefix + "probabilities"], e / e.sum(-1, keepdims=True), atol=1e-5
        )
        assert [x.decode() for x in got[prefix + "label"]] == list(labels[want.argmax(-1)])
    np.testing.assert_allclose(got["ids_logits"], got["text_logits"], atol=1e-6)

    # QA: the reference packing, then the offline decoder's candidate rules on Keras's beam
    ids = []
    for q, c in zip(QUESTIONS, CONTEXTS):
        qi = tok.tokenize_to_ids([q])[0][:QUERY_LEN]
        ci = [i for w in c.split() for i in tok.tokenize_to_ids([w])[0]]
        ci = ci[: FT_LEN - 3 - len(qi)]
        ids.append((qi, ci))
    packed = [[SPECIAL["cls"], *q, SPECIAL["sep"], *c, SPECIAL["sep"]] for q, c in ids]
    feats = {
        "input_ids": np.array([p + [0] * (FT_LEN - len(p)) for p in packed], np.int32),
        "input_mask": np.array([[1] * len(p) + [0] * (FT_LEN - len(p)) for p in packed], np.int32),
        "segment_ids": np.array(
            [
                [0] * (len(q) + 2) + [1] * (len(c) + 1) + [0] * (FT_LEN - len(q) - len(c) - 3)
                for q, c in ids
            ],
            np.int32,
        ),
    }
    for k in FEATURES:
        np.testing.assert_array_equal(got["qa_" + k], feats[k], err_msg=k)
    r = {k: v.numpy() for k, v in model.predict_task(complete(feats, tasks), "squad").items()}
    np.testing.assert_allclose(got["qa_null_score"], r["answerable_logit"], atol=1e-5)
    for b, (q, c) in enumerate(ids):
        first, last = len(q) + 2, len(q) + 1 + len(c)
        cands = [
            (r["start_top_log_probs"][b, i] + r["end_top_log_probs"][b, i, j], s, e)
            for i, s in enumerate(r["start_top_index"][b])
            for j, e in enumerate(r["end_top_index"][b, i])
            if first <= s <= e <= last and e - s + 1 <= 30
        ]
        answer = got["qa_answer"][b].decode()
        if not cands:  # the empty context
            assert b == 1 and answer == "" and got["qa_score"][b] == -np.inf
            assert got["qa_answer_words"][b] == b"" and got["qa_start_position"][b] == -1
            continue
        score, s, e = max(cands)
        assert abs(got["qa_score"][b] - score) < 1e-4 and np.isfinite(got["qa_score"][b])
        assert (got["qa_start_position"][b], got["qa_end_position"][b]) == (s, e)
        pieces = " ".join(FT_VOCAB[i] for i in feats["input_ids"][b, s : e + 1])
        assert answer == pieces.replace(" ##", "").replace("##", "")
        assert answer and answer in " ".join(tok.basic_tokenizer.tokenize(CONTEXTS[b]))
        words = got["qa_answer_words"][b].decode()
        assert words in CONTEXTS[b] and answer.split()[0].replace("[unk]", "") in words.lower()
        print(f"QA {QUESTIONS[b]!r}: {answer!r} / {words!r}, score {score:.3f}")
    assert got["qa_has_answer"].dtype == bool


def test_finetuned_tagging_and_regression_signatures_match_keras(tmp_path):
    """The signature functions before saving (the save/load path: the test above)."""
    from electra_tf.finetune.tagging.task import TaggingExample

    data = str(tmp_path / "data")
    model, tasks, model_dir = write_finetuned(data, ["chunk", "sts"], seed=1, legacy=True)
    legacy = json.load(open(os.path.join(model_dir, "config.json")))
    assert "kind" not in legacy and export.is_finetuning_config(f"{model_dir}/config.json")
    loaded = export.load_finetuned(model_dir, os.path.join(model_dir, "vocab.txt"))
    module = export.FinetunedServingModule(loaded, FT_LEN)
    assert module.kinds == {"chunk": "tagging", "sts": "regression"}
    names = export.finetuned_signature_names(module)
    assert names["serving_default"] == "serve_chunk" and names["serve_text"] == "serve_text_chunk"
    assert names["serve_text_pair"] == "serve_text_pair_sts" and len(names) == 8
    sentences = ["The cat sat on the mat .", "", "hello unwanted world " * 6, "x ! jumping"]
    got = module.serve_text_chunk(tf.constant(sentences))
    chunk = tasks[0]
    examples = [
        TaggingExample(i, "chunk", s.split(), ["O"] * len(s.split()))
        for i, s in enumerate(sentences)
    ]
    feats = chunk.featurize(examples, "dev", is_training=False)
    for k in FEATURES:
        np.testing.assert_array_equal(got[k].numpy(), feats[k], err_msg=k)
    want = model.predict_task(complete(feats, tasks), "chunk")
    n = feats["chunk_labels_mask"].sum(-1).astype(int)
    np.testing.assert_array_equal(got["num_words"].numpy(), n)
    assert n.tolist() == [7, 0, 13, 3]  # 13 words, 21 sub-tokens: the 14th does not fit
    tags = np.array(chunk.label_list)
    for b in range(len(sentences)):
        np.testing.assert_allclose(
            got["tag_logits"].numpy()[b, : n[b]], want["logits"].numpy()[b, : n[b]], atol=1e-5
        )
        pred = want["predictions"].numpy()[b, : n[b]]
        assert [t.decode() for t in got["tags"].numpy()[b]] == list(tags[pred]) + [""] * (
            got["tags"].shape[1] - n[b]
        )
    ref = [
        pack(FullTokenizer(os.path.join(model_dir, "vocab.txt")), a, b, FT_LEN)
        for a, b in zip(TEXTS, PAIRS_B)
    ]
    pair = {k: np.array([r[j] for r in ref], np.int32) for j, k in enumerate(FEATURES)}
    got = module.serve_text_pair_sts(tf.constant(TEXTS), tf.constant(PAIRS_B))
    want = model.predict_task(complete(pair, tasks), "sts")["predictions"].numpy() * 5.0
    np.testing.assert_allclose(got["prediction"].numpy(), want, atol=1e-4)


def test_finetuned_export_refuses_a_checkpoint_without_its_heads(tmp_path):
    _, _, model_dir = write_finetuned(str(tmp_path / "data"), ["sst"])
    config = json.load(open(os.path.join(model_dir, "config.json")))
    config["task_names"] = ["sst", "rte"]  # rte's head is not in the checkpoint
    json.dump(config, open(os.path.join(model_dir, "config.json"), "w"))
    with pytest.raises(UserError, match="does not hold every weight"):
        export.load_finetuned(model_dir, os.path.join(model_dir, "vocab.txt"))
