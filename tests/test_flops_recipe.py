"""One pretraining step's FLOPs of `experiments/recipes/pretrain_small_budget.json`, the recipe
the experiments budget by: the two ELECTRA figures its logged run recorded (config.json of
pt_electra_1e14: real 15,658,732,896, paper 43,874,049,600) pinned, and the untied-embedding,
Electric and two-tower variants added up by hand in the conventions of `electra_tf.flops.analytic`
(matmul 2·m·n; dropout 4, layer norm 5, GELU 8, softmax 5 per value; the post-attention layer
norm 5 per token). "Paper": lookups as dense one-hot products, backward = 1x forward;
"real": word lookups as gathers, backward = 2x forward.

The recipe's shapes: discriminator h=128, 4 layers, 2 heads, i=512, embeddings e=128 (no
projection); generator (a quarter) h=32, 4 layers, 1 head, i=128; V=15,943 (the vocab file's
entries); s=64 tokens, batch 32; int((0.15 + 0.005)·64) = 9 masked positions per sequence.

Per token, from the term lists:
  block = 8h² + 4hi + 9i + 4hs + 10sH + 20h + 5
    discriminator: 131,072 + 262,144 + 4,608 + 32,768 + 1,280 + 2,560 + 5 = 434,437
    generator:       8,192 +  16,384 + 1,152 +  8,192 +   640 +   640 + 5 =  35,205
  embeddings = 2eV (paper only) + 2e(s+2) + 11e (+ 2he + h when e != h)
    e=128, no projection:  4,081,408 + 16,896 + 1,408              = 4,099,712 (sparse 18,304)
    e=128 projected to 32: 4,099,712 + 8,192 + 32                  = 4,107,936 (sparse 26,528)
    e=32 (untied):         1,020,352 +  4,224 +   352              = 1,024,928 (sparse  4,576)
  binary head (h=128) = 2h² + 11h = 32,768 + 1,408 = 34,176
  MLM head per predicted token = 2eV + 2he + 14e + 7V (7V = 111,601):
    tied, h=32, e=128:      4,081,408 +  8,192 + 1,792 + 111,601 = 4,202,993
    untied, h=32, e=32:     1,020,352 +  2,048 +   448 + 111,601 = 1,134,449
    cloze tied, h=64 (both towers' states), e=128:
                            4,081,408 + 16,384 + 1,792 + 111,601 = 4,211,185
    cloze untied, h=64, e=32:
                            1,020,352 +  4,096 +   448 + 111,601 = 1,136,497

Per sequence (forward):
  discriminator = 64·(4·434,437 + embeddings + 34,176)
    paper 64·5,871,636 = 375,784,704; real 64·1,790,228 = 114,574,592
  generator, tied = 64·(4·35,205 + embeddings) + 9·4,202,993 (= 37,826,937)
    paper 64·4,248,756 + 37,826,937 = 309,747,321; real 64·167,348 + 37,826,937 = 48,537,209
  generator, untied = 64·(140,820 + embeddings) + 9·1,134,449 (= 10,210,041)
    paper 64·1,165,748 + 10,210,041 = 84,817,913; real 64·145,396 + 10,210,041 = 19,515,385
  two towers, tied = 2·64·(140,820 + embeddings) + 64·4,211,185 (= 269,515,840)
    paper 2·271,920,384 + 269,515,840 = 813,356,608; real 2·10,710,272 + 269,515,840 = 290,936,384
  two towers, untied = 2·64·(140,820 + embeddings) + 64·1,136,497 (= 72,735,808)
    paper 2·74,607,872 + 72,735,808 = 221,951,552; real 2·9,305,344 + 72,735,808 = 91,346,496

Per step: paper = 2·32·(discriminator + generator), real = 3·32·(discriminator + generator).
"""

import os

import pytest

from electra_tf.io_utils import read_json
from electra_tf.pretraining_config import PretrainingConfig
from electra_tf.pretraining_networks import StepFlops, step_flops
from electra_tf.pretraining_networks import pretraining_flops_per_step as flops_per_step
from electra_tf.vocab import load_vocab

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RECIPE = os.path.join(ROOT, "experiments", "recipes", "pretrain_small_budget.json")

DISC = dict(paper=375_784_704, real=114_574_592)
GENERATORS = {
    "tied": dict(paper=309_747_321, real=48_537_209),
    "untied": dict(paper=84_817_913, real=19_515_385),
    "two_tower": dict(paper=813_356_608, real=290_936_384),
    "two_tower_untied": dict(paper=221_951_552, real=91_346_496),
}


def expected(generator: str) -> StepFlops:
    g = GENERATORS[generator]
    return StepFlops(
        paper=2.0 * 32 * (DISC["paper"] + g["paper"]), real=3.0 * 32 * (DISC["real"] + g["real"])
    )


def recipe_config(**overrides) -> tuple[PretrainingConfig, int]:
    recipe = read_json(RECIPE)
    vocab_size = len(load_vocab(os.path.join(ROOT, recipe.pop("vocab_file"))))
    assert vocab_size == 15_943
    return PretrainingConfig.from_flat("m", "/nonexistent", {**recipe, **overrides}), vocab_size


def test_the_hand_totals():
    assert expected("tied") == StepFlops(paper=43_874_049_600, real=15_658_732_896)
    assert expected("untied") == StepFlops(paper=29_478_567_488, real=12_872_637_792)
    assert expected("two_tower") == StepFlops(paper=76_105_043_968, real=38_929_053_696)
    assert expected("two_tower_untied") == StepFlops(paper=38_255_120_384, real=19_768_424_448)


def test_electra_reproduces_the_logged_run():
    config, vocab_size = recipe_config()
    # the figures pt_electra_1e14's config.json recorded
    assert step_flops(config, vocab_size) == StepFlops(paper=43_874_049_600, real=15_658_732_896)
    # experiments/transfer.py's call
    real = flops_per_step(config, vocab_size, sparse_embed_lookup=True, backward_factor=2.0)
    assert (real, flops_per_step(config, vocab_size)) == (15_658_732_896, 43_874_049_600)


@pytest.mark.parametrize(
    "overrides, generator",
    [
        ({"untied_generator_embeddings": True}, "untied"),
        ({"objective": "electric"}, "two_tower"),
        ({"two_tower_generator": True}, "two_tower"),
        ({"objective": "electric", "untied_generator_embeddings": True}, "two_tower_untied"),
    ],
)
def test_generator_variants(overrides, generator):
    config, vocab_size = recipe_config(**overrides)
    assert step_flops(config, vocab_size) == expected(generator)
