"""Tests for electra_tf.flops and count_flops.py.

Expected totals are the original `flops_computation.py`'s printed output; component values come
from the reference notes (§7); the tiny cases are worked out by hand below.
"""

import json
import os
import sys
import types

import pytest
from harness import run_script

from electra_tf import flops, objectives
from electra_tf.errors import UserError

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The original's printed MODEL_FLOPS (python3 flops_computation.py).
PRINTED_TOTALS = {
    "elmo": 3.4114394716164127e18,
    "xlnet": 3.856582065028608e21,
    "gpt": 3.968752230785352e19,
    "bert_small": 1.4187399146496e18,
    "bert_base": 6.428335104e19,
    "bert_large": 1.91720905883648e20,
    "electra_small": 1.293743798272e18,
    "electra_base": 6.424541834277683e19,
    "electra_400k": 7.117606040895488e20,
    "electra_1.75M": 3.113952642891776e21,
    "roberta": 3.187221435776e21,
    "albert": 3.113923955392512e22,
    "t5_11b": 4.581900124212429e22,
}

# (batch_size, seq_len, train_steps) of each named run.
SHAPES = {
    "elmo": (20, 128, 10 * 768648884 / 2560),
    "xlnet": (8192, 512, 500000),
    "gpt": (128, 512, 960800),
    "bert_small": (128, 128, 1450000),
    "bert_base": (256, 512, 1000000),
    "bert_large": (256, 512, 1000000),
    "electra_small": (128, 128, 1000000),
    "electra_base": (256, 512, 766000),
    "electra_400k": (2048, 512, 400000),
    "electra_1.75M": (2048, 512, 1750000),
    "roberta": (8000, 512, 500000),
    "albert": (4096, 512, 1500000),
    "t5_11b": (2048, 512, 1000000),
}


def close(a, b, rel=1e-12):
    return a == pytest.approx(b, rel=rel, abs=0)


# ------------------------------------------------------------------------------------------
# The paper's table.


@pytest.mark.parametrize("name", sorted(PRINTED_TOTALS))
def test_paper_totals_match_printed_output(name):
    model = flops.PAPER_MODELS[name]
    assert close(model.total_flops, PRINTED_TOTALS[name])
    batch, seq_len, steps = SHAPES[name]
    assert (model.batch_size, model.seq_len) == (batch, seq_len)
    assert close(model.train_steps, steps)
    assert close(model.flops_per_step * model.train_steps, model.total_flops)


def test_paper_models_names_and_raw_products():
    assert set(flops.PAPER_MODELS) == set(PRINTED_TOTALS)
    # ELMo: 2 passes x 568,093,262,680 forward FLOPs per batch step.
    assert close(flops.PAPER_MODELS["elmo"].flops_per_step, 2 * 568093262680)
    # XLNet: 2 passes x batch 8192 x (15,064,773,691,518 / 32) per example.
    assert close(flops.PAPER_MODELS["xlnet"].flops_per_step, 2 * 8192 * 15064773691518 / 32)
    # The two large ELECTRA runs differ only in length.
    a, b = flops.PAPER_MODELS["electra_400k"], flops.PAPER_MODELS["electra_1.75M"]
    assert close(a.flops_per_step, b.flops_per_step)
    assert close(b.total_flops / a.total_flops, 1750000 / 400000)


# ------------------------------------------------------------------------------------------
# Component values (reference §7 table) for small (s=128, e=128, gen 64), base, large.

COMPONENTS = {
    # size: (h_d, l_d, h_g, s, e, batch, disc_block, disc_emb, disc_cls, gen_block, gen_emb,
    #        gen_mlm, train_per_step)
    "small": (
        256, 12, 64, 128, 128, 128,
        220594816, 1013006336, 17137664, 17400448, 1006690304, 160909240.0, 1293743798272,
    ),
    "base": (
        768, 12, 256, 512, 768, 256,
        8106543616, 24412028928, 608305152, 1091570176, 24613486592, 3799953120.0,
        83871303319552,
    ),
    "large": (
        1024, 24, 256, 512, 1024, 2048,
        14029949440, 32549371904, 1079508992, 1091570176, 32817938432, 5060906720.0,
        1779401510223872,
    ),
}  # fmt: skip


@pytest.mark.parametrize("size", sorted(COMPONENTS))
def test_component_values(size):
    h_d, l_d, h_g, s, e, batch, *expected = COMPONENTS[size]
    disc_block, disc_emb, disc_cls, gen_block, gen_emb, gen_mlm, per_step = expected
    disc = flops.TransformerFlops(h_d, l_d, s=s, e=e)
    gen = flops.TransformerFlops(h_g, l_d, s=s, e=e)
    assert disc.block_flops() == disc_block
    assert disc.input_embedding_flops() == disc_emb
    assert disc.binary_classification_flops() == disc_cls
    assert gen.block_flops() == gen_block
    assert gen.input_embedding_flops() == gen_emb
    assert close(gen.mlm_output_flops(), gen_mlm)
    train = disc.train_flops(batch, 1, discriminator=True) + gen.train_flops(batch, 1)
    assert close(train, per_step)
    assert close(flops.electra_train_flops(h_d, l_d, h_g, l_d, batch, 1, True, e=e, s=s), per_step)


def test_disc_and_gen_train_totals():
    small_d = flops.TransformerFlops(256, 12, s=128, e=128).train_flops(128, 1e6, True)
    small_g = flops.TransformerFlops(64, 12, s=128, e=128).train_flops(128, 1e6)
    assert close(small_d, 9.41384138752e17)
    assert close(small_g, 3.5235965952e17)
    base_d = flops.TransformerFlops(768, 12).train_flops(256, 766000, True)
    base_g = flops.TransformerFlops(256, 12, e=768).train_flops(256, 766000)
    assert close(base_d, 4.7964633509658624e19)
    assert close(base_g, 1.6280784833118208e19)
    large_d = flops.TransformerFlops(1024, 24).train_flops(2048, 1750000, True)
    large_g = flops.TransformerFlops(256, 24, e=1024).train_flops(2048, 1750000)
    assert close(large_d, 2.654652080324608e21)
    assert close(large_g, 4.59300562567168e20)


@pytest.mark.parametrize(
    "h, l, s, e, expected",
    [
        (256, 12, 128, 128, 3677281792),
        (256, 12, 512, 128, 17269749760),
        (768, 12, 512, None, 122298857472),
        (768, 12, 128, None, 28616498688),
        (1024, 24, 512, None, 370347667456),
        (1024, 24, 128, None, 87465671680),
    ],
)
def test_inference_flops_per_example(h, l, s, e, expected):
    assert flops.TransformerFlops(h, l, s=s, e=e).inference_flops() == expected


# ------------------------------------------------------------------------------------------
# Hand-computed tiny cases.


def test_dense_layer_by_hand():
    # [3 tokens] x [in 4] @ [4, 5] + bias: each output value is 4 multiplies + 4 adds (the
    # original's 2·m·n), plus one bias add.
    assert flops.dense_flops(4, 5) == 2 * 4 * 5 + 5 == 45
    assert flops.dense_flops(4, 5, tokens=3) == 135
    assert flops.dense_flops(4, 5, tokens=3, bias=False) == 120
    # The discriminator head is dense(h->h) + bias + GELU + dense(h->1) without its bias:
    # h=4: 32 + 4 + 8·4 + 8 = 76 per token; 3 tokens -> 228.
    tiny = flops.TransformerFlops(h=4, l=1, s=3, v=10, heads=2, i=8)
    assert tiny.binary_classification_flops() == 228
    assert tiny.binary_classification_flops() == 3 * (
        flops.dense_flops(4, 4) + 8 * 4 + flops.dense_flops(4, 1, bias=False)
    )


def _tiny(**kwargs):
    return flops.TransformerFlops(h=4, l=1, s=3, v=10, heads=2, i=8, **kwargs)


def test_attention_block_by_hand():
    # h=4, s=3, 2 heads of size 2, FFN 8. Per token:
    attention = (
        3 * 2 * 4 * 4  # q, k, v projections: 96
        + 3 * 4  # their biases: 12
        + 2 * 2 * 2 * 3  # scores: 2 heads x (2·head_size·s) = 24
        + 5 * 3 * 2  # softmax over s=3 scores per head: 30
        + 4 * 3 * 2  # dropout on the probabilities: 24
        + 3 * 2  # scale the scores by 1/sqrt(head_size): 6
        + 2 * 2 * 2 * 3  # probabilities @ values: 24
        + 2 * 4 * 4  # output projection: 32
        + 4  # its bias
        + 4 * 4  # dropout: 16
        + 4  # residual
        + 5  # layer norm, counted as 5 per token (the original's quirk)
    )
    assert attention == 277
    feed_forward = (
        2 * 4 * 8  # intermediate: 64
        + 8 * 8  # GELU: 64
        + 8  # bias
        + 2 * 8 * 4  # output: 64
        + 4  # bias
        + 4 * 4  # dropout: 16
        + 4  # residual
        + 5 * 4  # layer norm: 20
    )
    assert feed_forward == 244
    assert sum(_tiny().block_terms().values()) == 521
    assert _tiny().block_flops() == 3 * 521 == 1563
    # Counting the attention layer norm per value adds 5·(h - 1) = 15 per token.
    assert _tiny(attention_layer_norm_per_value=True).block_flops() == 3 * 536
    # A decoder doubles every attention term (self + encoder attention).
    assert _tiny(decoder=True).block_flops() == 3 * (2 * 277 + 244)
    # head_size overrides the q/k/v width: 2 heads x 3 = 6.
    wide = _tiny(head_size=3).block_terms()
    assert wide["qkv_projections"] == 3 * 2 * 4 * 6
    assert wide["attention_scores"] == 2 * 6 * 3


def test_embeddings_and_mlm_head_by_hand():
    # Dense one-hot word lookup 2·4·10 = 80, position (3 rows) + token type (2 rows) lookups
    # 2·4·5 = 40, adding them 8, layer norm 20, dropout 16: 164 per token.
    assert _tiny().input_embedding_flops() == 3 * 164
    # A gather costs nothing: 164 - 80.
    assert _tiny(sparse_embed_lookup=True).input_embedding_flops() == 3 * 84
    # e=2 != h=4: lookups on 2-wide tables (40 + 20 + 4 + 10 + 8) and a projection 2·4·2 + 4.
    assert _tiny(e=2).input_embedding_flops() == 3 * (40 + 20 + 4 + 10 + 8 + 16 + 4)
    # MLM head per predicted token: vocab projection 80, dense 32 + bias 4, GELU 32, layer norm
    # 20, softmax 50, target word 20 = 238; one of the three positions is predicted.
    assert sum(_tiny().mlm_output_terms().values()) == 238
    assert close(_tiny(output_frac=1 / 3).mlm_output_flops(), 238)
    # The MLM projection is always a matmul, even with sparse lookups.
    assert close(_tiny(output_frac=1 / 3, sparse_embed_lookup=True).mlm_output_flops(), 238)


def test_train_and_inference_by_hand():
    tiny = _tiny()
    disc_forward = 1563 + 492 + 228
    assert tiny.inference_flops() == disc_forward
    # forward + backward (= forward) for 2 sequences and 5 steps.
    assert tiny.train_flops(2, 5, discriminator=True) == 2 * 2 * 5 * disc_forward
    # The "3x forward" convention.
    assert tiny.train_flops(2, 5, True, backward_factor=2.0) == 3 * 2 * 5 * disc_forward
    mlm_forward = 1563 + 492 + 0.15625 * 238 * 3
    assert close(tiny.train_flops(1, 1), 2 * mlm_forward)


def test_defaults_resolved():
    t = flops.TransformerFlops(h=768, l=12)
    assert (t.e, t.i, t.heads, t.qkv_size, t.s, t.v) == (768, 3072, 12, 768, 512, 30522)
    assert flops.TransformerFlops(h=32, l=1).heads == 1


# ------------------------------------------------------------------------------------------
# Counting from project configs.

SMALL_DISC = {
    "vocab_size": 30522,
    "embedding_size": 128,
    "hidden_size": 256,
    "num_hidden_layers": 12,
    "num_attention_heads": 4,
    "intermediate_size": 1024,
    "hidden_act": "gelu",
}
SMALL_GEN = dict(SMALL_DISC, hidden_size=64, num_attention_heads=1, intermediate_size=256)


def test_network_flops_per_step_matches_paper_small():
    per_step = objectives.network_flops_per_step(
        SMALL_DISC, SMALL_GEN, 128, 128, output_frac=0.15625
    )
    assert close(per_step, flops.PAPER_MODELS["electra_small"].flops_per_step)
    # Objects with attributes work as dicts do.
    disc_obj = types.SimpleNamespace(**SMALL_DISC)
    gen_obj = types.SimpleNamespace(**SMALL_GEN)
    assert close(
        objectives.network_flops_per_step(disc_obj, gen_obj, 128, 128, output_frac=0.15625),
        per_step,
    )
    mlm = objectives.network_flops_per_step(
        SMALL_DISC, None, 128, 128, objective="mlm", output_frac=0.15625
    )
    assert close(mlm, flops.PAPER_MODELS["bert_small"].flops_per_step)


def test_network_flops_per_step_masked_positions_and_conventions():
    assert flops.max_predictions_per_seq(128, 0.15) == 19
    assert flops.max_predictions_per_seq(512, 0.15) == 79
    # The model predicts 19 of 128 positions, not the paper's 20: one generator MLM output per
    # sequence less (8,045,462 FLOPs each, see the small MLM head), fwd + bwd, batch 128.
    paper = 1293743798272
    per_step = objectives.network_flops_per_step(SMALL_DISC, SMALL_GEN, 128, 128)
    assert close(per_step, paper - 2 * 128 * 8045462)
    forward = objectives.network_flops_per_step(
        SMALL_DISC, SMALL_GEN, 128, 128, backward_factor=0.0
    )
    assert close(forward, per_step / 2)
    three_x = objectives.network_flops_per_step(
        SMALL_DISC, SMALL_GEN, 128, 128, backward_factor=2.0
    )
    assert close(three_x, 1.5 * per_step)
    # Sparse lookups drop the two dense word lookups (disc + gen), 2·128·30522 per token each.
    sparse = objectives.network_flops_per_step(
        SMALL_DISC, SMALL_GEN, 128, 128, sparse_embed_lookup=True
    )
    assert close(per_step - sparse, 2 * 128 * 2 * (2 * 128 * 30522 * 128))


def test_network_flops_per_step_untied_and_default_embedding():
    disc = dict(SMALL_DISC, embedding_size=None)
    gen = dict(SMALL_GEN, embedding_size=None)
    untied = objectives.network_flops_per_step(
        disc, gen, 4, 128, tied_embeddings=False, output_frac=0.15625
    )
    expected = flops.electra_train_flops(256, 12, 64, 12, 4, 1, False, s=128)
    assert close(untied, expected)


def test_no_generator_network_counts_the_discriminator_alone():
    # uniform / unigram sampling: 2 x forward of the discriminator with its binary head
    # (paper table for small at s=128, e=128: block 220,594,816 x 12 + input embedding
    # 1,013,006,336 + binary classifier 17,137,664 per sequence)
    per_seq = 12 * 220_594_816 + 1_013_006_336 + 17_137_664
    got = objectives.network_flops_per_step(SMALL_DISC, None, 3, 128)
    assert got == 2 * 3 * per_seq


def test_network_flops_per_step_errors():
    with pytest.raises(UserError, match="objective"):
        objectives.network_flops_per_step(SMALL_DISC, SMALL_GEN, 1, 128, objective="electrc")
    with pytest.raises(UserError, match="gen_config"):
        objectives.network_flops_per_step(SMALL_DISC, None, 1, 128, objective="replace_mlm")
    missing = {k: v for k, v in SMALL_DISC.items() if k != "num_hidden_layers"}
    with pytest.raises(UserError, match="num_hidden_layers"):
        objectives.network_flops_per_step(missing, SMALL_GEN, 1, 128)


# ------------------------------------------------------------------------------------------
# count_flops.py


def _run_script(*args):
    return run_script("count_flops.py", *args, timeout=300)


def test_count_flops_json():
    result = _run_script("--json")
    assert result.returncode == 0, result.stderr
    table = json.loads(result.stdout)
    assert set(table) == set(PRINTED_TOTALS)
    for name, row in table.items():
        assert set(row) == {"total_flops", "flops_per_step", "train_steps", "batch_size", "seq_len"}
        assert close(row["total_flops"], PRINTED_TOTALS[name])
        assert close(row["flops_per_step"] * row["train_steps"], row["total_flops"])
    assert table["bert_small"]["train_steps"] == 1450000


def test_count_flops_table_and_backward_factor():
    result = _run_script()
    assert result.returncode == 0, result.stderr
    for name in PRINTED_TOTALS:
        assert f"\n{name} " in result.stdout
    assert "1.2937e+18" in result.stdout  # electra_small total
    result = _run_script("--json", "--backward_factor=2")
    table = json.loads(result.stdout)
    assert close(table["electra_small"]["total_flops"], 1.5 * 1.293743798272e18)
    result = _run_script("--backward_factor=-1")
    assert result.returncode == 1
    assert result.stderr.startswith("error: --backward_factor")


def test_count_flops_of_a_recipe():
    # the small-budget recipe's ELECTRA step, added up by hand in tests/test_flops_recipe.py
    recipe = "--hparams=experiments/recipes/pretrain_small_budget.json"
    result = _run_script(recipe, "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {
        "hparams": "experiments/recipes/pretrain_small_budget.json",
        "vocab_size": 15943,
        "paper_flops_per_step": 43_874_049_600,
        "real_flops_per_step": 15_658_732_896,
    }
    result = _run_script(recipe)
    assert "43,874,049,600" in result.stdout and "15,658,732,896" in result.stdout
    result = _run_script(recipe, "--profile")
    assert result.returncode == 1 and result.stderr.startswith("error: --hparams")


# ------------------------------------------------------------------------------------------
# Profiler counts.


@pytest.mark.parametrize(
    "equation, shapes, expected",
    [
        ("bld,de->ble", [[2, 3, 4], [4, 5]], 2 * 2 * 3 * 4 * 5),  # a dense layer's matmul
        ("bhqd,bhkd->bhqk", [[2, 2, 3, 4], [2, 2, 5, 4]], 2 * 2 * 2 * 3 * 5 * 4),  # scores
        ("ij,jk", [[3, 4], [4, 5]], 2 * 3 * 4 * 5),  # implicit output "ik"
        ("...ij,jk->...ik", [[7, 2, 3], [3, 4]], 2 * 7 * 2 * 3 * 4),
        ("ij,ij->ij", [[3, 4], [3, 4]], 12),  # element-wise: multiplies only
        ("i,j->ij", [[3], [4]], 12),  # outer product
        ("ij->i", [[3, 4]], 12),  # a reduction: one add per value
        ("ij->ji", [[3, 4]], 0),  # a transpose
    ],
)
def test_einsum_flops(equation, shapes, expected):
    assert flops.einsum_flops(equation, shapes) == expected


def test_profiler_counts_einsum_dense_and_matmul():
    tf = pytest.importorskip("tensorflow")
    keras = pytest.importorskip("keras")
    x = tf.TensorSpec([2, 3, 4], tf.float32)
    w = tf.TensorSpec([4, 5], tf.float32)
    einsum = flops.profile_function_flops(lambda a, b: tf.einsum("bld,de->ble", a, b), x, w)
    matmul = flops.profile_function_flops(lambda a, b: tf.matmul(a, b), x, w)
    assert einsum == matmul == 2 * 2 * 3 * 4 * 5
    # A Keras dense layer: the matmul plus one add per output value for the bias.
    dense = keras.layers.Dense(5)
    dense.build((None, 4))
    assert flops.profile_function_flops(dense, tf.TensorSpec([3, 4])) == flops.dense_flops(
        4, 5, tokens=3
    )
    with pytest.raises(ValueError, match="static shapes"):
        flops.profile_function_flops(dense, tf.TensorSpec([None, 4]))


TINY_HPARAMS = {
    "vocab_size": 128,
    "embedding_size": 32,
    "model_hparam_overrides": {
        "num_hidden_layers": 2,
        "hidden_size": 64,
        "intermediate_size": 256,
        "num_attention_heads": 2,
    },
}


@pytest.fixture(scope="module")
def tiny_profile():
    from electra_tf.train.profiling import profile_pretraining_flops

    return profile_pretraining_flops("small", batch_size=2, seq_len=32, hparams=TINY_HPARAMS)


def test_profile_pretraining_tiny(tiny_profile):
    r = tiny_profile
    assert r["max_predictions_per_seq"] == 4  # int(0.155 * 32)
    assert r["generator_config"]["hidden_size"] == 16  # a quarter of the discriminator
    # The analytic side, computed independently from TransformerFlops: discriminator
    # (h=64, e=32, 2 layers, binary head) + generator (h=16, tied e=32, MLM head on 4 of 32
    # positions), sparse lookups, vocab 128.
    disc = flops.TransformerFlops(64, 2, s=32, v=128, e=32, heads=2, sparse_embed_lookup=True)
    gen = flops.TransformerFlops(
        16, 2, s=32, v=128, e=32, heads=1, i=64, output_frac=4 / 32, sparse_embed_lookup=True
    )
    forward = 2 * (disc.forward_flops(discriminator=True) + gen.forward_flops())
    assert close(r["analytic_forward_flops"], forward)
    assert close(r["analytic_train_step_flops"], 2 * forward)
    assert close(r["analytic_train_step_flops_backward_2x"], 3 * forward)
    # The real graph's forward agrees with the analytic count (matmuls exactly; element-wise
    # ops are counted differently), and its backward pass costs about 2x the forward pass.
    assert abs(r["forward_ratio"] - 1) < 0.05
    assert close(r["forward_ratio"], r["profiler_forward_flops"] / forward)
    assert 1.4 < r["train_step_ratio"] < 1.65
    assert abs(r["train_step_ratio_backward_2x"] - 1) < 0.1


def test_count_flops_profile_format(tiny_profile):
    sys.path.insert(0, REPO)
    try:
        import count_flops
    finally:
        sys.path.remove(REPO)
    text = count_flops.format_profile(tiny_profile)
    lines = text.splitlines()
    assert lines[0].startswith("ELECTRA-small pretraining, batch 2 x 32 tokens")
    assert lines[2].split()[0] == "forward"
    assert float(lines[2].split()[-1]) == pytest.approx(tiny_profile["forward_ratio"], abs=1e-4)
