"""Export of fine-tuned models (`run_finetuning.py` with keep_all_models): every kind's
signatures against the Keras model, in a process that imports only tensorflow and
tensorflow_text, and the kept directory's layouts (with and without the config.json's kind)."""

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf
from test_checkpoints import SPECIAL, VOCAB
from test_export import FEATURES, PAIRS_B, TEXTS, cli, pack

from electra_tf import export
from electra_tf.errors import UserError
from electra_tf.tokenization import FullTokenizer

FT_VOCAB = VOCAB + ["who", "what", "where", "in", "park", "is", "was", "with", "sits", "##it"]
FT_LEN, QUERY_LEN, BEAM = 24, 6, 4
CONTEXTS = ["The cat sat on the mat.", "", "The Cat was in the park, playing with a dog. " * 3]
QUESTIONS = ["who sat?", "what is it, what was it, what?", "Where is the cat?"]


def write_finetuned(
    data_dir: str, tasks: list, seed: int = 0, legacy: bool = False, pooling: str = "cls"
):
    """A fine-tuned model's directory as run_finetuning.py (keep_all_models) writes it (`legacy`:
    as it wrote it before the config.json had a `kind`; `pooling`: the classifiers'), every
    weight random. Returns (model, its Task objects, the directory)."""
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
        classifier_pooling=pooling,
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
    run = {**config.to_flat(), "model_config": mc.to_dict(), "task_names": tasks}
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


@pytest.mark.slow
def test_finetuned_classifier_litert_matches_its_saved_model(tmp_path):
    _, _, model_dir = write_finetuned(str(tmp_path / "data"), ["sst"], seed=3, pooling="mean")
    tuned = export.load_finetuned(model_dir, os.path.join(model_dir, "vocab.txt"))
    export.export_finetuned_saved_model(tuned, str(tmp_path / "saved"))
    served = tf.saved_model.load(str(tmp_path / "saved")).signatures["serve_text"](
        text=tf.constant(TEXTS)
    )
    feed = {k: served[k].numpy() for k in ("input_ids", "input_mask", "segment_ids")}
    want = served["logits"].numpy()
    paths = export.export_finetuned_litert(tuned, str(tmp_path / "litert"), "dynamic_int8")
    assert [os.path.basename(p) for p in paths] == ["model.tflite", "model_dynamic_int8.tflite"]
    got = {}
    for path in paths:
        runner = export.litert_interpreter(path).get_signature_runner()
        got[os.path.basename(path)] = runner(**feed)
    fp32 = got["model.tflite"]
    diff = np.abs(fp32["logits"] - want).max()
    print(f"fine-tuned LiteRT vs SavedModel logits: max |diff| {diff:.2e}")
    assert diff < 1e-4
    np.testing.assert_array_equal(fp32["label_id"], want.argmax(-1))
    np.testing.assert_allclose(fp32["probabilities"].sum(-1), 1.0, atol=1e-6)
    q = got["model_dynamic_int8.tflite"]["logits"]
    assert 0 < np.abs(q - want).max() < 0.5  # int8 weights: close, not identical
    config = json.load(open(tmp_path / "litert" / "export_config.json"))
    assert config["task"] == "sst" and config["labels"] == ["0", "1"]
    assert config["outputs"] == ["logits", "probabilities", "label_id"]
    # a model whose tasks are not one classification is refused in one line
    _, _, two = write_finetuned(str(tmp_path / "two"), ["sst", "squad"])
    both = export.load_finetuned(two, os.path.join(two, "vocab.txt"))
    with pytest.raises(UserError, match=r"one classification task \(this one: sst"):
        export.export_finetuned_litert(both, str(tmp_path / "refused"))
