"""Hugging Face directories this project cannot load exactly: each is one error naming the file
and the key (or listing the tensors); a pickle is never opened; the CLI exits non-zero with one
line."""

import json
import os

import numpy as np
import pytest
from harness import error_line, run_script
from test_checkpoints import HG, IG, H, I, V, write_run
from test_huggingface import hf_config, hf_discriminator, hf_generator, values, write_hf

from electra_tf import run_dir
from electra_tf.checkpoint import load_model, locate
from electra_tf.errors import UserError


@pytest.fixture(scope="module")
def tensors(tmp_path_factory):
    """(the hand-made discriminator's tensors, the generator's) of a random tiny model."""
    model, _ = write_run(str(tmp_path_factory.mktemp("run")))
    v = values(model)
    return hf_discriminator(v), hf_generator(v)


def disc_dir(path, tensors, **config):
    return write_hf(str(path), tensors, hf_config("ElectraForPreTraining", H, 2, I, **config))


def test_pytorch_model_bin_is_never_loaded(tmp_path):
    d = tmp_path / "pt"
    d.mkdir()
    (d / "config.json").write_text(json.dumps(hf_config("ElectraForPreTraining", H, 2, I)))
    (d / "pytorch_model.bin").write_bytes(b"\x80\x02not really a pickle")
    with pytest.raises(UserError, match="pytorch_model.bin, a pickle.*save it as safetensors"):
        locate.find_checkpoint(str(d))
    with pytest.raises(UserError, match="pytorch_model.bin"):
        load_model.load_networks(str(d))


@pytest.mark.parametrize(
    "key, value, match",
    [
        ("layer_norm_eps", 1e-5, "layer_norm_eps 1e-05 cannot be represented"),
        ("hidden_act", "silu", "hidden_act 'silu' has no exact counterpart"),
        ("position_embedding_type", "relative_key", "position_embedding_type 'relative_key'"),
        ("is_decoder", True, "is_decoder true cannot be represented"),
        ("model_type", "bert", "model_type 'bert' is not 'electra'"),
        ("embedding_size", 0, "embedding_size must be a positive integer"),
    ],
)
def test_config_values_that_cannot_be_represented_name_the_key(
    tensors, tmp_path, key, value, match
):
    d = disc_dir(tmp_path / "d", tensors[0], **{key: value})
    with pytest.raises(UserError, match=match) as e:
        load_model.load_networks(d)
    assert os.path.join(d, "config.json") in str(e.value)


def test_missing_unexpected_and_misshapen_tensors_are_listed(tensors, tmp_path):
    t = dict(tensors[0])
    del t["electra.encoder.layer.1.output.dense.bias"]
    t["electra.pooler.dense.weight"] = np.zeros([H, H])
    t["discriminator_predictions.dense.weight"] = np.zeros([H, 3])
    with pytest.raises(UserError) as e:
        load_model.load_networks(disc_dir(tmp_path / "d", t))
    msg = str(e.value)
    assert "read as ElectraForPreTraining" in msg
    assert "1 missing tensor(s): electra.encoder.layer.1.output.dense.bias" in msg
    assert "1 unexpected tensor(s): electra.pooler.dense.weight" in msg
    assert f"discriminator_predictions.dense.weight is [{H}, 3], config.json says [{H}, {H}]" in msg


def test_a_config_that_does_not_fit_the_tensors(tensors, tmp_path):
    # the tensors of 2 layers, a config of 3: the third layer's tensors are missing
    with pytest.raises(UserError, match=r"16 missing tensor\(s\): electra.encoder.layer.2"):
        load_model.load_networks(disc_dir(tmp_path / "d", tensors[0], num_hidden_layers=3))


def test_tied_generator_with_a_different_output_table(tensors, tmp_path):
    t = dict(tensors[1])
    t["generator_lm_head.weight"] = t["electra.embeddings.word_embeddings.weight"] + 1.0
    d = write_hf(str(tmp_path / "g"), t, hf_config("ElectraForMaskedLM", HG, 1, IG))
    with pytest.raises(UserError, match="generator_lm_head.weight differs from .*tie_word_embedd"):
        load_model.load_networks(d)


def test_generator_head_needs_gelu(tensors, tmp_path):
    config = hf_config("ElectraForMaskedLM", HG, 1, IG, hidden_act="relu")
    d = write_hf(str(tmp_path / "g"), tensors[1], config)
    with pytest.raises(UserError, match="hidden_act 'relu': transformers' generator_predictions"):
        load_model.load_networks(d, head="generator")
    assert load_model.load_networks(d, head="encoder").parts == ("discriminator",)  # no head: fine


def test_pairs_are_a_discriminator_and_a_generator_that_agree(tensors, tmp_path):
    d = disc_dir(tmp_path / "d", tensors[0])
    g = write_hf(str(tmp_path / "g"), tensors[1], hf_config("ElectraForMaskedLM", HG, 1, IG))
    # the generator first: its config.json's architectures tell, and the pair is reordered
    assert run_dir.huggingface_dirs(f"{g},{d}") == [d, g]
    assert load_model.load_networks(f"{g},{d}").parts == load_model.PARTS
    config = hf_config("ElectraForMaskedLM", HG, 1, IG)
    del config["architectures"]  # ... else the order given must be right
    unnamed = write_hf(str(tmp_path / "g0"), tensors[1], config)
    with pytest.raises(UserError, match="a pair is DISC_DIR,GEN_DIR"):
        load_model.load_networks(f"{unnamed},{d}")
    bigger = dict(tensors[1])  # a generator of one more token
    for k in ("electra.embeddings.word_embeddings.weight", "generator_lm_head.bias"):
        bigger[k] = np.concatenate([bigger[k], bigger[k][:1]])
    config = hf_config("ElectraForMaskedLM", HG, 1, IG, vocab_size=V + 1)
    other = write_hf(str(tmp_path / "g2"), bigger, config)
    with pytest.raises(UserError, match=f"vocab_size {V + 1} differs from the discriminator's"):
        load_model.load_networks(f"{d},{other}")
    with pytest.raises(UserError, match="a comma joins exactly two Hugging Face directories"):
        locate.find_checkpoint(f"{d},{tmp_path}")


def test_vocab_from_tokenizer_json_when_there_is_no_vocab_txt(tensors, tmp_path):
    d = write_hf(
        str(tmp_path / "d"), tensors[0], hf_config("ElectraForPreTraining", H, 2, I), vocab=False
    )
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hello", "##s"]
    tokenizer = {
        "normalizer": {"type": "BertNormalizer", "lowercase": False},
        "model": {"type": "WordPiece", "vocab": {t: i for i, t in enumerate(tokens)}},
    }
    with open(os.path.join(d, "tokenizer.json"), "w") as f:
        json.dump(tokenizer, f)
    found = locate.vocab_beside(d)
    assert open(found).read().split("\n")[:-1] == tokens
    assert locate.read_run_config(os.path.join(d, "config.json")).do_lower_case is False


@pytest.mark.slow
def test_cli_errors_are_one_line(tensors, tmp_path):
    pt = tmp_path / "pt"
    pt.mkdir()
    (pt / "config.json").write_text(json.dumps(hf_config("ElectraForPreTraining", H, 2, I)))
    (pt / "pytorch_model.bin").write_bytes(b"x")
    p = run_script("export_model.py", f"--checkpoint={pt}", f"--export_dir={tmp_path / 'o1'}")
    assert "save it as safetensors first" in error_line(p)
    bad = disc_dir(tmp_path / "eps", tensors[0], layer_norm_eps=1e-6)
    p = run_script("export_model.py", f"--checkpoint={bad}", f"--export_dir={tmp_path / 'o2'}")
    assert "layer_norm_eps" in error_line(p)
    good = disc_dir(tmp_path / "good", tensors[0])
    p = run_script(
        "export_model.py",
        f"--checkpoint={good}",
        f"--export_dir={tmp_path / 'o3'}",
        "--head=generator",
        "--format=huggingface",
    )
    assert "--head=generator needs generator_predictions" in error_line(p)
    p = run_script(
        "export_model.py",
        f"--checkpoint={good}",
        f"--export_dir={tmp_path / 'o4'}",
        "--format=huggingface",
    )
    assert p.returncode == 0, p.stderr[-2000:]
    assert sorted(os.listdir(tmp_path / "o4")) == [
        "config.json",
        "model.safetensors",
        "special_tokens_map.json",
        "tokenizer_config.json",
        "vocab.txt",
    ]
