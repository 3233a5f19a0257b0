"""`electra_tf.flops.pretraining`: one pretraining step's FLOPs of a config, the count every
caller uses. The totals are derived by hand below from the conventions of
`electra_tf.flops.analytic` (matmul 2·m·n, dropout 4, layer norm 5, GELU 8, softmax 5 per value;
the post-attention layer norm 5 per token, the kept quirk), for a 1-layer model small enough
to add up on paper."""

from electra_tf.flops.pretraining import StepFlops, pretraining_flops_per_step, step_flops
from electra_tf.modeling.builders import flops_per_step
from electra_tf.pretraining_config import PretrainingConfig

# discriminator: h=8, i=16, 2 heads, 1 layer, embeddings e=6 (projected to 8), V=50;
# generator (generator_hidden_size 0.5): h=4, i=16, max(1, 4 // 64) = 1 head, 1 layer;
# s=8 tokens, batch 2, int((0.15 + 0.005) * 8) = 1 masked position per sequence
V, S, B, N = 50, 8, 2, 1
TINY = dict(
    model_size="small",
    embedding_size=6,
    model_hparam_overrides=dict(
        hidden_size=8, num_hidden_layers=1, num_attention_heads=2, intermediate_size=16
    ),
    generator_hidden_size=0.5,
    max_seq_length=S,
    train_batch_size=B,
    vocab_size=V,
)


def config(**overrides) -> PretrainingConfig:
    return PretrainingConfig.from_flat("m", "/nonexistent", {**TINY, **overrides})


# Per token, summed from the term lists (see the module docstring):
# block: Q/K/V 3·2h² + biases 3h, scores 2hs, softmax 5sH, dropout 4sH, scale sH, weighted
#   values 2hs, output 2h² + bias h, dropout 4h, residual h, layer norm 5 (quirk); FFN 2hi +
#   GELU 8i + bias i, 2hi + bias h, dropout 4h, residual h, layer norm 5h
#   = 8h² + 4hi + 9i + 4hs + 10sH + 20h + 5
def block(h, i, heads, s=S):
    return 8 * h * h + 4 * h * i + 9 * i + 4 * h * s + 10 * s * heads + 20 * h + 5


# embeddings: word lookup 2eV (dense convention only), position + type lookups 2e(s+2), their
# adds 2e, layer norm 5e, dropout 4e; projection 2he + bias h where e != h
def embeddings(e, h, dense=True, s=S):
    return (2 * e * V if dense else 0) + 2 * e * (s + 2) + 11 * e + (2 * h * e + h if e != h else 0)


# MLM head per predicted token: vocab projection 2eV, dense 2he + bias e, GELU 8e, layer norm
# 5e, softmax 5V, target word 2V
def mlm_head(e, h):
    return 2 * e * V + 2 * h * e + 14 * e + 7 * V


# discriminator head per token: dense 2h² + bias h, GELU 8h, logit 2h
def binary_head(h):
    return 2 * h * h + 11 * h


DISC = S * (block(8, 16, 2) + embeddings(6, 8) + binary_head(8))
DISC_SPARSE = S * (block(8, 16, 2) + embeddings(6, 8, dense=False) + binary_head(8))


def test_the_hand_formulas_on_the_tiny_config():
    # written out once: the discriminator's terms
    assert block(8, 16, 2) == 512 + 512 + 144 + 256 + 160 + 160 + 5 == 1749
    assert embeddings(6, 8) == 600 + 120 + 66 + 96 + 8 == 890
    assert binary_head(8) == 128 + 88 == 216
    assert DISC == 8 * (1749 + 890 + 216) == 22840


def test_default_tied_generator():
    # the generator reads the discriminator's 6-wide embeddings and projects them to its 4
    gen = S * (block(4, 16, 1) + embeddings(6, 4)) + N * mlm_head(6, 4)
    assert gen == 8 * (821 + 838) + 1082 == 14354
    paper = 2 * B * (DISC + gen)  # backward = 1x forward
    assert paper == 148776
    assert pretraining_flops_per_step(config()) == paper
    assert flops_per_step(config()) == paper  # the wrapper the experiments call


def test_untied_generator_embeddings_count_the_generators_own_width():
    # untied: the generator's embeddings are 4 wide (its hidden size): no projection, and the
    # MLM head projects onto a [50, 4] table
    gen = S * (block(4, 16, 1) + embeddings(4, 4)) + N * mlm_head(4, 4)
    assert gen == 8 * (821 + 524) + 838 == 11598
    c = config(untied_generator_embeddings=True)
    assert pretraining_flops_per_step(c) == 2 * B * (DISC + gen) == 137752
    # the real convention: lookups as gathers, backward = 2x forward
    gen_sparse = S * (block(4, 16, 1) + embeddings(4, 4, dense=False)) + N * mlm_head(4, 4)
    real = 3 * B * (DISC_SPARSE + gen_sparse)
    assert real == 6 * (18040 + 8398) == 158628
    assert step_flops(c) == StepFlops(paper=137752.0, real=158628.0)
    assert flops_per_step(c, sparse_embed_lookup=True, backward_factor=2.0) == real


# the two-tower generator: both towers over every position, and the cloze head (a dense from
# both towers' 2·4 = 8 states) at every position
TWO_TOWER_TIED = 2 * S * (block(4, 16, 1) + embeddings(6, 4)) + S * mlm_head(6, 8)


def test_two_tower_generator():
    assert TWO_TOWER_TIED == 2 * 8 * 1659 + 8 * 1130 == 35584
    c = config(two_tower_generator=True)
    assert pretraining_flops_per_step(c) == 2 * B * (DISC + TWO_TOWER_TIED) == 233696
    # untied: each tower has its own 4-wide embeddings
    untied = 2 * S * (block(4, 16, 1) + embeddings(4, 4)) + S * mlm_head(4, 8)
    assert untied == 2 * 8 * 1345 + 8 * 870 == 28480
    c = config(two_tower_generator=True, untied_generator_embeddings=True)
    assert pretraining_flops_per_step(c) == 2 * B * (DISC + untied) == 205280


def test_electric_counts_its_two_tower_generator_and_the_discriminator():
    # Electric forces the two-tower generator; its discriminator is a per-token binary head
    for hparams in ({"objective": "electric"}, {"electric_objective": True}):
        c = config(**hparams)
        assert c.generator.two_tower_generator
        assert pretraining_flops_per_step(c) == 2 * B * (DISC + TWO_TOWER_TIED) == 233696
        assert pretraining_flops_per_step(c, backward_factor=0.0) == B * 58424


def test_generator_equal_to_the_discriminator_runs_twice():
    # untied_generator=false: the discriminator runs once as the generator (MLM head on its
    # 8-wide states, onto the 6-wide table) and once as the discriminator
    c = config(untied_generator=False, generator_hidden_size=1.0)
    gen = S * (block(8, 16, 2) + embeddings(6, 8)) + N * mlm_head(6, 8)
    assert gen == 8 * 2639 + 1130 == 22242
    assert pretraining_flops_per_step(c) == 2 * B * (DISC + gen) == 180328
    # uniform sampling: no generator network at all
    assert pretraining_flops_per_step(config(uniform_generator=True)) == 2 * B * DISC


def test_vocab_size_given_wins_and_bert_is_the_fallback():
    c = PretrainingConfig.from_flat(
        "m", "/nonexistent", {k: v for k, v in TINY.items() if k != "vocab_size"}
    )
    assert c.vocab_size_for() == 30522 and c.vocab_size_for(50) == 50
    assert pretraining_flops_per_step(c, 50) == pretraining_flops_per_step(config())
    assert config().vocab_size_for() == 50


def test_describe_and_the_profile_use_the_same_count(monkeypatch):
    from electra_tf.train import describe, profiling

    hparams = dict(TINY, objective="electric")
    assert describe(config(objective="electric"))["flops_per_step"] == 233696
    # the profile's analytic columns (lookups as gathers), without tracing (the profiler's
    # figure stubbed): the towers' two dense word lookups 2·(2·6·50) per token come off
    monkeypatch.setattr(profiling, "profile_function_flops", lambda fn, specs: 1.0)
    r = profiling.profile_pretraining_flops("small", batch_size=B, seq_len=S, hparams=hparams)
    two_tower_sparse = TWO_TOWER_TIED - S * 2 * (2 * 6 * V)
    assert two_tower_sparse == 35584 - 9600 == 25984
    forward = B * (DISC_SPARSE + two_tower_sparse)
    assert forward == 2 * (18040 + 25984) == 88048
    assert r["analytic_forward_flops"] == forward
    assert r["analytic_train_step_flops"] == 2 * forward
    assert r["analytic_train_step_flops_backward_2x"] == 3 * forward


# experiments/recipes/pretrain_small_budget.json, the recipe of the logged runs and of the
# experiments' FLOP budgets: discriminator h=128, i=512, 2 heads, 4 layers, e=128 (no
# projection); generator (generator_hidden_size 0.25) h=32, i=128, 1 head, 4 layers;
# V=15,943 (data/vocab/movie_wiki_16k_uncased.txt), s=64, batch 32,
# int((0.15 + 0.005) * 64) = 9 masked positions per sequence. By hand, per token:
#   discriminator block 8h² + 4hi + 9i + 4hs + 10sH + 20h + 5
#     = 131072 + 262144 + 4608 + 32768 + 1280 + 2560 + 5 = 434,437; x 4 layers = 1,737,748
#   its embeddings 2e(s+2) + 11e = 16896 + 1408 = 18,304 (+ 2eV = 4,081,408 with dense lookups)
#   its binary head 2h² + 11h = 32768 + 1408 = 34,176
#   -> per sequence 64 x 1,790,228 = 114,574,592 (gathers), 64 x 5,871,636 = 375,784,704 (dense)
#   generator block = 8192 + 16384 + 1152 + 8192 + 640 + 640 + 5 = 35,205; x 4 = 140,820
#   tied: its embeddings are the discriminator's 128 wide, projected to 32:
#     16896 + 1408 + 2·32·128 + 32 = 26,528 (+ 4,081,408 dense)
#     -> 64 x 167,348 = 10,710,272 (gathers), 64 x 4,248,756 = 271,920,384 (dense)
#     MLM head (e=128, h=32): 2eV + 2he + 14e + 7V = 4081408 + 8192 + 1792 + 111601
#       = 4,202,993; x 9 = 37,826,937
#   real (gathers, 3x forward): 3 x 32 x (114,574,592 + 10,710,272 + 37,826,937)
#     = 96 x 163,111,801 = 15,658,732,896
#   paper (dense, 2x forward): 2 x 32 x (375,784,704 + 271,920,384 + 37,826,937)
#     = 64 x 685,532,025 = 43,874,049,600
# (the figures of the logged run; they must not change)
RECIPE_REAL, RECIPE_PAPER = 15_658_732_896, 43_874_049_600


def recipe_config(**overrides) -> PretrainingConfig:
    import json
    import os

    from electra_tf.recipes import recipe_model_hparams

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with open(os.path.join(root, "experiments/recipes/pretrain_small_budget.json")) as f:
        recipe = json.load(f)
    hparams = {**recipe, **recipe_model_hparams(recipe, root), **overrides}
    hparams.pop("vocab_file")
    assert hparams["vocab_size"] == 15943
    return PretrainingConfig.from_flat("m", "/nonexistent", hparams)


def test_the_recipes_electra_step_is_pinned():
    c = recipe_config()
    assert c.max_predictions_per_seq == 9
    assert step_flops(c) == StepFlops(paper=RECIPE_PAPER, real=RECIPE_REAL)
    # as the experiments call it (transfer.py, efficiency.py)
    assert flops_per_step(c, 15943, sparse_embed_lookup=True, backward_factor=2.0) == RECIPE_REAL
    assert flops_per_step(c, 15943) == RECIPE_PAPER


def test_the_recipe_with_untied_generator_embeddings():
    # untied: the generator's embeddings are its own 32 wide, no projection:
    #   embeddings 2·32·66 + 11·32 = 4,576 (+ 2·32·15943 = 1,020,352 dense)
    #   -> 64 x (140,820 + 4,576) = 9,305,344 (gathers), 64 x 1,165,748 = 74,607,872 (dense)
    #   MLM head (e=32, h=32): 1020352 + 2048 + 448 + 111601 = 1,134,449; x 9 = 10,210,041
    #   real: 96 x (114,574,592 + 9,305,344 + 10,210,041) = 96 x 134,089,977 = 12,872,637,792
    #   paper: 64 x (375,784,704 + 74,607,872 + 10,210,041) = 64 x 460,602,617 = 29,478,567,488
    c = recipe_config(untied_generator_embeddings=True)
    assert step_flops(c) == StepFlops(paper=29_478_567_488, real=12_872_637_792)


def test_the_recipe_with_electric_and_the_two_tower_generator():
    # both towers (tied: 128-wide embeddings, each projected to 32) over all 64 positions:
    #   2 x 10,710,272 = 21,420,544 (gathers), 2 x 271,920,384 = 543,840,768 (dense)
    # the cloze head (dense from 2·32 = 64 to e=128) at every position:
    #   4081408 + 2·64·128 + 1792 + 111601 = 4,211,185; x 64 = 269,515,840
    #   real: 96 x (114,574,592 + 21,420,544 + 269,515,840) = 96 x 405,510,976 = 38,929,053,696
    #   paper: 64 x (375,784,704 + 543,840,768 + 269,515,840) = 64 x 1,189,141,312
    #     = 76,105,043,968
    expected = StepFlops(paper=76_105_043_968, real=38_929_053_696)
    assert step_flops(recipe_config(objective="electric")) == expected
    assert step_flops(recipe_config(two_tower_generator=True)) == expected
