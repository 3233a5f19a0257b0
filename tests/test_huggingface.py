"""The Hugging Face layout both ways, without torch: directories written here by hand (tensor
names spelled out from Hugging Face's naming, as electra_tf/huggingface/names.py documents it,
not from that module) load and compute what the same weights compute in this project's layout;
this project's export writes exactly those tensors; ours -> Hugging Face -> ours is exact."""

import json
import os
import shutil

import numpy as np
import pytest
from harness import run_script
from safetensors.numpy import load_file, save_file
from test_checkpoints import (
    HG,
    IG,
    LAYERS,
    VOCAB,
    E,
    H,
    I,
    V,
    make_pretrainer,
    write_run,
    write_vocab,
)

from electra_tf import export, run_dir
from electra_tf.checkpoint import load_model, locate, restore
from electra_tf.finetune import pretrained
from electra_tf.finetune.classification.head import ClassificationHead
from electra_tf.finetune.config import FinetuningConfig
from electra_tf.finetune.model import build_model

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "finetune")
LINEARS = [
    ("attention.self.query", "attention/self/query"),
    ("attention.self.key", "attention/self/key"),
    ("attention.self.value", "attention/self/value"),
    ("attention.output.dense", "attention/output/dense"),
    ("intermediate.dense", "intermediate/dense"),
    ("output.dense", "output/dense"),
]
NORMS = [
    ("attention.output.LayerNorm", "attention/output/LayerNorm"),
    ("output.LayerNorm", "output/LayerNorm"),
]


def values(model) -> dict:
    return {w.path: w.numpy() for w in model.weights}


def hf_encoder(v: dict, prefix: str, scope: str, embeddings_scope: str) -> dict:
    """Hugging Face's names for one encoder: Linear weights [out, in], LayerNorm weight/bias."""
    t = {
        f"{prefix}embeddings.word_embeddings.weight": v[
            f"{embeddings_scope}/embeddings/word_embeddings"
        ],
        f"{prefix}embeddings.position_embeddings.weight": v[
            f"{embeddings_scope}/embeddings/position_embeddings"
        ],
        f"{prefix}embeddings.token_type_embeddings.weight": v[
            f"{embeddings_scope}/embeddings/token_type_embeddings"
        ],
        f"{prefix}embeddings.LayerNorm.weight": v[f"{embeddings_scope}/embeddings/LayerNorm/gamma"],
        f"{prefix}embeddings.LayerNorm.bias": v[f"{embeddings_scope}/embeddings/LayerNorm/beta"],
        f"{prefix}embeddings_project.weight": v[f"{scope}/embeddings_project/kernel"].T,
        f"{prefix}embeddings_project.bias": v[f"{scope}/embeddings_project/bias"],
    }
    for n in range(LAYERS):
        hf, ours = f"{prefix}encoder.layer.{n}.", f"{scope}/encoder/layer_{n}/"
        for a, b in LINEARS:
            t[f"{hf}{a}.weight"] = v[f"{ours}{b}/kernel"].T
            t[f"{hf}{a}.bias"] = v[f"{ours}{b}/bias"]
        for a, b in NORMS:
            t[f"{hf}{a}.weight"] = v[f"{ours}{b}/gamma"]
            t[f"{hf}{a}.bias"] = v[f"{ours}{b}/beta"]
    return t


def hf_discriminator(v: dict) -> dict:
    t = hf_encoder(v, "electra.", "electra", "electra")
    t["discriminator_predictions.dense.weight"] = v["discriminator_predictions/dense/kernel"].T
    t["discriminator_predictions.dense.bias"] = v["discriminator_predictions/dense/bias"]
    t["discriminator_predictions.dense_prediction.weight"] = v[
        "discriminator_predictions/dense_1/kernel"
    ].T
    t["discriminator_predictions.dense_prediction.bias"] = v[
        "discriminator_predictions/dense_1/bias"
    ]
    return t


def hf_generator(v: dict) -> dict:
    """The tiny model's generator (tied to the discriminator's embeddings) as ElectraForMaskedLM;
    the tied output layer is not stored, as transformers saves it."""
    t = hf_encoder(v, "electra.", "generator", "electra")
    t["generator_predictions.dense.weight"] = v["generator_predictions/dense/kernel"].T
    t["generator_predictions.dense.bias"] = v["generator_predictions/dense/bias"]
    t["generator_predictions.LayerNorm.weight"] = v["generator_predictions/LayerNorm/gamma"]
    t["generator_predictions.LayerNorm.bias"] = v["generator_predictions/LayerNorm/beta"]
    t["generator_lm_head.bias"] = v["generator_predictions/output_bias"]
    return t


def hf_config(architecture: str, hidden: int, heads: int, ffn: int, **overrides) -> dict:
    d = dict(
        architectures=[architecture],
        model_type="electra",
        vocab_size=V,
        embedding_size=E,
        hidden_size=hidden,
        num_hidden_layers=LAYERS,
        num_attention_heads=heads,
        intermediate_size=ffn,
        hidden_act="gelu",
        max_position_embeddings=512,
        type_vocab_size=2,
        layer_norm_eps=1e-12,
        pad_token_id=0,
        transformers_version="5.24.0",  # keys this project does not read are fine
    )
    return {**d, **overrides}


def write_hf(directory: str, tensors: dict, config: dict, lower=None, vocab=True) -> str:
    os.makedirs(directory, exist_ok=True)
    tensors = {k: np.ascontiguousarray(v, np.float32) for k, v in tensors.items()}
    save_file(tensors, os.path.join(directory, "model.safetensors"), {"format": "pt"})
    with open(os.path.join(directory, "config.json"), "w") as f:
        json.dump(config, f)
    if vocab:
        write_vocab(os.path.join(directory, "vocab.txt"))
    if lower is not None:
        with open(os.path.join(directory, "tokenizer_config.json"), "w") as f:
            json.dump({"do_lower_case": lower, "tokenizer_class": "ElectraTokenizer"}, f)
    return directory


@pytest.fixture(scope="module")
def hf(tmp_path_factory):
    """(our run dir, the model, the hand-made discriminator dir, generator dir)."""
    base = tmp_path_factory.mktemp("hf")
    run, (model, _) = str(base / "run"), write_run(str(base / "run"))
    v = values(model)
    disc_config = hf_config("ElectraForPreTraining", H, 2, I)
    disc = write_hf(str(base / "disc"), hf_discriminator(v), disc_config, lower=False)
    gen = write_hf(str(base / "gen"), hf_generator(v), hf_config("ElectraForMaskedLM", HG, 1, IG))
    return run, model, disc, gen


def batch(seed=0, b=3, length=10):
    rng = np.random.default_rng(seed)
    ids = rng.integers(5, V, (b, length)).astype(np.int32)
    mask = (np.arange(length)[None] < rng.integers(3, length + 1, (b, 1))).astype(np.int32)
    seg = ((np.arange(length)[None] >= length // 2) * mask).astype(np.int32)
    return ids * mask, mask, seg


def outputs(nets, ids, mask, seg) -> dict:
    out = {}
    d = nets.discriminator(ids, mask, seg, training=False)
    out["sequence_output"] = d.numpy()
    if getattr(nets, "discriminator_predictions", None) is not None:
        out["discriminator_logits"] = nets.discriminator_predictions(d).numpy()
    if nets.generator is not None:
        out["mlm_logits"] = nets.generator_predictions(nets.generator(ids, mask, seg)).numpy()
    return out


def test_hand_made_discriminator_computes_what_our_layout_computes(hf):
    _, model, disc, _ = hf
    loaded = load_model.load_networks(disc, head="discriminator")
    assert loaded.parts == ("discriminator", "discriminator_predictions")
    assert loaded.report.format == "huggingface" and len(loaded.report.restored) == 43
    assert loaded.config.kind == run_dir.HUGGINGFACE and loaded.config.do_lower_case is False
    ids, mask, seg = batch()
    ours, theirs = outputs(model, ids, mask, seg), outputs(loaded.networks, ids, mask, seg)
    for key in ("sequence_output", "discriminator_logits"):
        np.testing.assert_array_equal(theirs[key], ours[key])


def test_hand_made_pair_is_both_networks_with_tied_embeddings(hf):
    _, model, disc, gen = hf
    loaded = load_model.load_networks(f"{disc},{gen}")
    assert loaded.parts == load_model.PARTS
    nets = loaded.networks
    assert nets.generator is not nets.discriminator
    assert nets.generator.embeddings is nets.discriminator.embeddings  # the same tables: tied
    ids, mask, seg = batch(1)
    ours, theirs = outputs(model, ids, mask, seg), outputs(nets, ids, mask, seg)
    for key in ours:
        np.testing.assert_array_equal(theirs[key], ours[key])
    # the generator alone: it is the only network, its head the generator head
    alone = load_model.load_networks(gen, head="generator")
    assert alone.parts == ("discriminator", "generator_predictions")
    g = alone.networks
    np.testing.assert_array_equal(
        g.generator_predictions(g.discriminator(ids, mask, seg)).numpy(), ours["mlm_logits"]
    )


def test_untied_generator_output_layer(hf, tmp_path):
    _, model, _, _ = hf
    v = values(model)
    t = hf_generator(v)
    out_w = np.random.default_rng(3).normal(0, 0.1, (V, E)).astype(np.float32)
    t["generator_lm_head.weight"] = out_w
    config = hf_config("ElectraForMaskedLM", HG, 1, IG, tie_word_embeddings=False)
    loaded = load_model.load_networks(write_hf(str(tmp_path / "g"), t, config), head="generator")
    g = loaded.networks
    ids, mask, seg = batch(2)
    head = model.generator_predictions
    x = head.layer_norm(head.dense(model.generator(ids, mask, seg))).numpy()
    want = x @ out_w.T + v["generator_predictions/output_bias"]
    got = g.generator_predictions(g.discriminator(ids, mask, seg)).numpy()
    np.testing.assert_allclose(got, want, atol=1e-5)
    # and back: the output layer is stored, tie_word_embeddings false
    out = str(tmp_path / "export")
    export.export_huggingface(loaded, "generator", out, os.path.join(loaded.prefix, "vocab.txt"))
    written = load_file(os.path.join(out, "model.safetensors"))
    np.testing.assert_array_equal(written["generator_lm_head.weight"], out_w)
    assert json.load(open(os.path.join(out, "config.json")))["tie_word_embeddings"] is False


@pytest.mark.parametrize("head", ["discriminator", "generator", "encoder"])
def test_export_writes_the_documented_tensors_and_round_trips_exactly(hf, head, tmp_path):
    run, model, _, _ = hf
    v = values(model)
    loaded = load_model.load_networks(run, head=head)
    out = str(tmp_path / head)
    export.export_huggingface(loaded, head, out, os.path.join(run, "vocab.txt"), do_lower_case=True)
    written = load_file(os.path.join(out, "model.safetensors"))
    want = {
        "discriminator": hf_discriminator(v),
        "generator": hf_generator(v),
        "encoder": {
            k[len("electra.") :]: x
            for k, x in hf_encoder(v, "electra.", "electra", "electra").items()
        },
    }[head]
    assert sorted(written) == sorted(want)
    for k in want:
        assert written[k].dtype == np.float32
        np.testing.assert_array_equal(written[k], want[k], err_msg=k)
    config = json.load(open(os.path.join(out, "config.json")))
    arch = {"discriminator": "ElectraForPreTraining", "generator": "ElectraForMaskedLM"}
    assert config["architectures"] == [arch.get(head, "ElectraModel")]
    assert config["hidden_size"] == (HG if head == "generator" else H)
    assert config["embedding_size"] == E and config["layer_norm_eps"] == 1e-12
    tokenizer = json.load(open(os.path.join(out, "tokenizer_config.json")))
    assert tokenizer["do_lower_case"] is True and tokenizer["mask_token"] == "[MASK]"
    assert json.load(open(os.path.join(out, "special_tokens_map.json")))["cls_token"] == "[CLS]"
    assert open(os.path.join(out, "vocab.txt")).read().split() == VOCAB
    # ... and back: every weight of the network and head as it was
    back = load_model.load_networks(out, head=head)
    got = {w.path: w.numpy() for w in back.networks.weights_of(back.parts)}
    src = {"generator": ("discriminator", "generator_predictions")}.get(head, back.parts)
    assert len(got) == len(loaded.networks.weights_of(loaded.parts))
    for w in back.networks.weights_of(src):
        path = w.path
        if head == "generator" and path.startswith("electra/") and "embeddings/" not in path:
            path = "generator/" + path[len("electra/") :]  # the generator alone is the network
        np.testing.assert_array_equal(got[w.path], v[path], err_msg=path)


def test_pair_round_trip_and_pretraining_warm_start(hf, tmp_path):
    run, model, _, _ = hf
    loaded = load_model.load_networks(run)
    d, g = str(tmp_path / "d"), str(tmp_path / "g")
    export.export_huggingface(loaded, "discriminator", d, os.path.join(run, "vocab.txt"))
    export.export_huggingface(loaded, "generator", g, os.path.join(run, "vocab.txt"))
    back = load_model.load_networks(f"{d},{g}")
    v = values(model)
    for w in back.networks.weights_of(load_model.PARTS):
        np.testing.assert_array_equal(w.numpy(), v[w.path], err_msg=w.path)
    _, fresh = make_pretrainer(seed=5)
    restored, missing = restore.warm_start(fresh, f"{d},{g}")
    assert missing == [] and restored == len({id(w) for w in fresh.weights})
    for w in fresh.weights:
        np.testing.assert_array_equal(w.numpy(), v[w.path], err_msg=w.path)


def test_finetuning_starts_from_a_hugging_face_directory(hf, tmp_path):
    _, model, disc, gen = hf
    hparams = {"init_checkpoint": f"{disc},{gen}", "task_names": ["sst"]}
    hparams = pretrained.with_pretrained_size(str(tmp_path), "m", hparams)
    assert hparams["do_lower_case"] is False  # the discriminator's tokenizer_config.json
    assert "model_size" not in hparams  # hidden 32 is no preset's
    config = FinetuningConfig("m", str(tmp_path), **hparams)
    assert pretrained.resolve_vocab_file(config) == os.path.join(disc, "vocab.txt")
    prefix = pretrained.find_init_checkpoint(config)
    model_config = pretrained.load_model_config(config, prefix)
    assert (model_config.hidden_size, model_config.embedding_size) == (H, E)
    ids, mask, seg = batch()
    features = {
        "input_ids": ids,
        "input_mask": mask,
        "segment_ids": seg,
        "task_id": np.zeros(3, np.int32),
        "sst_label_ids": np.zeros(3, np.int32),
        "sst_eid": np.arange(3, dtype=np.int32),
    }
    tuned, _ = build_model(model_config, [ClassificationHead("sst", 2, name="sst")], features)
    pretrained.restore_encoder(tuned, prefix)
    np.testing.assert_array_equal(
        tuned.encoder(ids, mask, seg).numpy(), model.discriminator(ids, mask, seg).numpy()
    )


@pytest.mark.slow
def test_cli_finetunes_from_a_hugging_face_directory(hf, tmp_path):
    """run_finetuning.py with init_checkpoint = a Hugging Face directory of 16 positions: the
    tasks' default length (128) is lowered to 16, the directory's vocab and casing are used."""
    _, model, _, _ = hf
    t = hf_discriminator(values(model))
    t["electra.embeddings.position_embeddings.weight"] = t[
        "electra.embeddings.position_embeddings.weight"
    ][:16]
    config = hf_config("ElectraForPreTraining", H, 2, I, max_position_embeddings=16)
    disc = write_hf(str(tmp_path / "disc16"), t, config, lower=False)
    data = tmp_path / "data"
    shutil.copytree(os.path.join(DATA, "sst"), data / "finetuning_data" / "sst")
    hparams = {"task_names": ["sst"], "init_checkpoint": disc, "num_train_epochs": 1.0}
    hparams.update(jit_compile=False, train_batch_size=2, seed=1)
    p = run_script(
        "run_finetuning.py",
        f"--data_dir={data}",
        "--model_name=m",
        f"--hparams={json.dumps(hparams)}",
    )
    assert p.returncode == 0, p.stderr[-3000:]
    assert (
        "the tasks' default 128 exceeds the model's max_position_embeddings; using 16" in p.stdout
    )
    result = json.load(open(data / "models" / "m" / "results" / "sst.json"))
    assert result["config"]["max_seq_length"] == 16 and result["config"]["do_lower_case"] is False
    assert result["config"]["vocab_file"] == os.path.join(disc, "vocab.txt")
    assert result["model_config"]["hidden_size"] == H


@pytest.mark.slow
def test_score_electra_mlm_scores_a_pair_as_it_scores_the_run(tiny_dataset, tmp_path):
    """The same weights scored from this project's run and from their Hugging Face export."""
    import tensorflow as tf
    from harness import TINY_RUN

    from electra_tf.pretraining_config import PretrainingConfig
    from electra_tf.pretraining_networks import build_pretrainer
    from electra_tf.vocab import read_vocab, special_token_ids

    data = str(tmp_path / "data")
    shutil.copytree(tiny_dataset, data)
    vocab_file = os.path.join(data, "vocab.txt")
    config = PretrainingConfig.from_flat("run", data, dict(TINY_RUN))
    tokens = read_vocab(vocab_file)
    model = build_pretrainer(config, len(tokens), special_token_ids(tokens, vocab_file))
    rng = np.random.default_rng(0)
    for w in {id(w): w for w in model.weights}.values():
        w.assign(rng.normal(0, 0.2, w.shape).astype(np.float32) + ("gamma" in w.path))
    run = run_dir.RunDirectory(os.path.join(data, "models", "run"))
    disc, gen = config.model_configs(len(tokens))
    run.write_config(run_dir.PRETRAINING, config.to_flat(), disc, gen)
    run.copy_vocab(vocab_file)
    tf.train.Checkpoint(model=model).save(os.path.join(run.path, "ckpt"))
    loaded = load_model.load_networks(run.path)
    d, g = str(tmp_path / "d"), str(tmp_path / "g")
    export.export_huggingface(loaded, "discriminator", d, vocab_file)
    export.export_huggingface(loaded, "generator", g, vocab_file)
    common = [f"--data_dir={data}", "--num_batches=2", "--batch_size=4", "--top_k=8"]
    ours = run_script("score_electra_mlm.py", "--model_name=run", *common)
    theirs = run_script(
        "score_electra_mlm.py", f"--checkpoint={d},{g}", "--max_seq_length=32", *common
    )
    assert ours.returncode == 0 and theirs.returncode == 0, (ours.stderr + theirs.stderr)[-3000:]
    a, b = (json.loads(p.stdout[p.stdout.index("{") :]) for p in (ours, theirs))
    assert a["num_predictions"] == b["num_predictions"] > 0
    for key in ("electra_mlm_accuracy", "generator_mlm_accuracy", "target_in_top_k"):
        assert a[key] == pytest.approx(b[key]), key


def test_a_directory_without_tokenizer_exports_the_ids_signature_only(hf, tmp_path):
    """`model.save_pretrained` alone writes no vocab: the SavedModel then has serving_default
    only, and the Hugging Face export the model files only."""
    import tensorflow as tf

    _, model, _, _ = hf
    config = hf_config("ElectraForPreTraining", H, 2, I)
    d = write_hf(str(tmp_path / "d"), hf_discriminator(values(model)), config, vocab=False)
    assert locate.vocab_beside(d) is None
    loaded = load_model.load_networks(d, head="discriminator")
    out = str(tmp_path / "sm")
    export.export_saved_model(loaded, "discriminator", out, None)
    served = tf.saved_model.load(out)
    assert sorted(served.signatures) == ["serving_default"]
    ids, mask, seg = batch(4)
    got = served.signatures["serving_default"](
        input_ids=tf.constant(ids), input_mask=tf.constant(mask), segment_ids=tf.constant(seg)
    )
    want = outputs(model, ids, mask, seg)["discriminator_logits"]
    np.testing.assert_allclose(got["discriminator_logits"].numpy(), want, atol=1e-6)
    hf_out = str(tmp_path / "hf")
    export.export_huggingface(loaded, "discriminator", hf_out, None)
    assert sorted(os.listdir(hf_out)) == ["config.json", "model.safetensors"]
