"""A fine-tuning step's FLOPs (flops.finetuning): the encoder counted as pretraining counts its
networks, the heads by hand, and the whole forward against the TF profiler's count."""

import tensorflow as tf

from electra_tf.finetune.classification.head import ClassificationHead
from electra_tf.finetune.model import build_model
from electra_tf.finetune.tagging.head import TaggingHead
from electra_tf.flops import TransformerFlops, profile_function_flops
from electra_tf.flops.finetuning import finetuning_flops_per_step, finetuning_step_flops
from electra_tf.model_config import ModelConfig

CONFIG = ModelConfig(
    vocab_size=120,
    embedding_size=16,
    hidden_size=32,
    num_hidden_layers=2,
    num_attention_heads=2,
    intermediate_size=64,
)
SEQ, BATCH = 24, 4


def features(batch=1):
    z = tf.zeros([batch, SEQ], tf.int32)
    zb = tf.zeros([batch], tf.int32)
    # tagging's dense reads one vector per labelled position: as many as the sequence's tokens
    return {"input_ids": z, "input_mask": z + 1, "segment_ids": z, "task_id": zb,
            "sst_label_ids": zb, "sst_eid": zb, "chunk_labels": z, "chunk_labeled_positions": z,
            "chunk_labels_mask": tf.cast(z, tf.float32), "chunk_eid": zb}  # fmt: skip


def test_a_two_task_step_by_hand_and_against_the_profiler():
    heads = [ClassificationHead("sst", 3, name="sst"), TaggingHead("chunk", 5, name="chunk")]
    model, _ = build_model(CONFIG, heads, features())
    encoder = TransformerFlops(32, 2, s=SEQ, v=120, e=16, i=64, heads=2, sparse_embed_lookup=True)
    encoder_forward = 2 * encoder.block_flops() + encoder.input_embedding_flops()
    # the heads by hand: [CLS] -> dense 32x3 (+3 bias) once a sequence; tagging's dense 32x5
    # (+5 bias) at each of the 24 positions
    heads_forward = (2 * 32 * 3 + 3) + (2 * 32 * 5 + 5) * SEQ
    real = finetuning_flops_per_step(model, SEQ, BATCH, sparse_embed_lookup=True, backward_factor=2)
    assert real == 3 * BATCH * (encoder_forward + heads_forward)
    both = finetuning_step_flops(model, SEQ, BATCH)
    assert both.real == real
    paper = TransformerFlops(32, 2, s=SEQ, v=120, e=16, i=64, heads=2)
    paper_forward = 2 * paper.block_flops() + paper.input_embedding_flops() + heads_forward
    assert both.paper == 2 * BATCH * paper_forward  # lookups as one-hot products: 2*16*120 a token
    # the traced forward pass (losses included) agrees: matmuls exactly, element-wise ops and
    # the losses counted differently
    spec = {k: tf.TensorSpec([BATCH, *v.shape[1:]], v.dtype) for k, v in features().items()}
    profiled = profile_function_flops(lambda f: model(f, training=False)[0], spec)
    forward = finetuning_flops_per_step(model, SEQ, BATCH, sparse_embed_lookup=True,
                                        backward_factor=0)  # fmt: skip
    assert abs(profiled / forward - 1) < 0.05, profiled / forward
