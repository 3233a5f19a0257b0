"""`electra_tf.pretraining_networks`: one pretraining step's FLOPs of a config, the count every
caller uses. The totals are derived by hand below from the conventions of
`electra_tf.flops.analytic` (matmul 2·m·n, dropout 4, layer norm 5, GELU 8, softmax 5 per value;
the post-attention layer norm 5 per token, the kept quirk), for a 1-layer model small enough
to add up on paper."""

from electra_tf.pretraining_config import PretrainingConfig
from electra_tf.pretraining_networks import StepFlops, pretraining_flops_per_step, step_flops
from electra_tf.pretraining_networks import pretraining_flops_per_step as flops_per_step

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
    described = describe(config(objective="electric"))
    assert described["flops_per_step"] == 233696
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
    assert described["real_flops_per_step"] == 3 * forward == 264144
