"""The Chinese recipes (starting points, experiments/chinese/README.md): the pretraining recipe
spends 1e14 real FLOPs (the package's count, and by hand in tests/test_flops_recipe.py's
conventions), uses the committed Chinese vocab and whole-word masking; the fine-tuning recipes
read as fine-tuning configs for both Chinese tasks.

By hand, per token (block = 8h² + 4hi + 9i + 4hs + 10sH + 20h + 5; s = 128, V = 6,143):
  discriminator block (h=128, i=512, H=2): 131,072 + 262,144 + 4,608 + 65,536 + 2,560 + 2,560
      + 5 = 468,485
  generator block (h=32, i=128, H=1): 8,192 + 16,384 + 1,152 + 16,384 + 1,280 + 640 + 5 = 44,037
  embeddings (real: lookups as gathers) 2e(s+2) + 11e = 33,280 + 1,408 = 34,688; the generator's
      projection to 32 adds 2he + h = 8,224: 42,912
  binary head 2h² + 11h = 34,176
  MLM head per predicted token (tied, h=32, e=128) 2eV + 2he + 14e + 7V
      = 1,572,608 + 8,192 + 1,792 + 43,001 = 1,625,593; int((0.15 + 0.005) x 128) = 19 predicted
Per sequence: discriminator 128·(4·468,485 + 34,688 + 34,176) = 248,678,912;
  generator 128·(4·44,037 + 42,912) + 19·1,625,593 = 58,925,947.
Per step (real: backward = 2x forward, batch 32): 96·307,604,859 = 29,530,066,464.
1e14 / 29,530,066,464 = 3,386.4 -> 3,387 steps.
"""

import os

from electra_tf.finetune.config import FinetuningConfig
from electra_tf.io_utils import read_json
from electra_tf.pretraining_config import PretrainingConfig
from electra_tf.pretraining_networks import step_flops
from electra_tf.vocab import read_vocab
from experiments.chinese import tasks

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RECIPES = os.path.join(ROOT, "experiments", "recipes")
STEP_REAL = 29_530_066_464


def test_the_pretraining_recipe_spends_1e14_real_flops():
    recipe = read_json(os.path.join(RECIPES, "pretrain_chinese.json"))
    vocab = read_vocab(os.path.join(ROOT, recipe.pop("vocab_file")))
    assert len(vocab) == 6_143
    config = PretrainingConfig.from_flat("zh", "/nonexistent", recipe)
    assert config.task.whole_word_masking and config.model.max_seq_length == 128
    real = step_flops(config, len(vocab)).real
    assert real == STEP_REAL
    steps = config.optimization.num_train_steps
    assert steps == 3_387 and (steps - 1) * real < 1e14 <= steps * real
    assert config.optimization.num_warmup_steps == round(0.1 * steps)


def test_the_finetuning_recipes_read_for_both_tasks():
    for name, random_init in (("finetune_chinese.json", False),
                              ("finetune_chinese_random_init.json", True)):  # fmt: skip
        recipe = read_json(os.path.join(RECIPES, name))
        assert "task_names" not in recipe  # one recipe for both task kinds: the run names them
        for task in (tasks.SENTIMENT, tasks.TAGGING):
            config = FinetuningConfig.from_flat(
                "zh", "/nonexistent", {**recipe, "task_names": [task]}
            )
            assert config.random_init is random_init
            assert config.max_seq_length == tasks.MAX_SEQ_LENGTH
