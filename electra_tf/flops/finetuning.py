"""The FLOPs of one fine-tuning step, in the two conventions of `flops.analytic.StepFlops` (paper:
lookups as one-hot products, backward = forward; real: lookups as gathers, backward = 2x
forward, the one the log's FLOP rate and MFU use).

Counted from the built model: the encoder from its config (the shapes pretraining counts its
networks with), and every task head from its trainable variables: a kernel [in, out] is 2·in·out
per position it is applied at and a bias `out`, at one position for the heads that read a
pooled vector (`reads_pooled_vector = True`: classification, regression) and at every position
for the others (tagging, QA). Every head runs on every example (a multi-task batch computes all
heads and keeps each example's own), so all are counted.
"""

from electra_tf.flops.analytic import PAPER, REAL, StepFlops, transformer_flops_from_config


def head_flops_per_sequence(head, seq_len: int) -> int:
    """Forward FLOPs of one task head for one sequence, from its variables' shapes."""
    positions = 1 if getattr(head, "reads_pooled_vector", False) else seq_len
    total = 0
    for v in head.trainable_weights:
        shape = [int(d) for d in v.shape]
        if len(shape) == 2:
            total += 2 * shape[0] * shape[1]
        elif len(shape) == 1:
            total += shape[0]
    return total * positions


def finetuning_flops_per_step(
    model,
    seq_len: int,
    batch_size: int,
    sparse_embed_lookup: bool = False,
    backward_factor: float = 1.0,
) -> float:
    """FLOPs of one training step of a built `finetune.model.FinetuningModel` on `batch_size`
    sequences of `seq_len` tokens."""
    encoder = transformer_flops_from_config(
        model.model_config, seq_len, sparse_embed_lookup=sparse_embed_lookup
    )
    forward = encoder.l * encoder.block_flops() + encoder.input_embedding_flops()
    forward += sum(head_flops_per_sequence(h, seq_len) for h in model.task_heads.heads)
    return float((1.0 + backward_factor) * batch_size * forward)


def finetuning_step_flops(model, seq_len: int, batch_size: int) -> StepFlops:
    """One fine-tuning step's FLOPs in the paper's and the real convention."""
    return StepFlops(
        paper=finetuning_flops_per_step(model, seq_len, batch_size, **PAPER),
        real=finetuning_flops_per_step(model, seq_len, batch_size, **REAL),
    )
