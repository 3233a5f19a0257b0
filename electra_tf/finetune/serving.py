"""What a task kind's SavedModel signature functions are given and give back.

Each kind (`classification/serving.py`, `tagging/serving.py`, `qa/serving.py`) turns its head into
`ServingFunction`s; `electra_tf.export` only assembles them: it wraps each in a `tf.function`
named `<kind>_<task>` and writes the SavedModel.
"""

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import tensorflow as tf

FEATURES = ("input_ids", "input_mask", "segment_ids")
IDS_SIGNATURE = tuple(tf.TensorSpec([None, None], tf.int32, name=k) for k in FEATURES)
TEXT_SIGNATURE = (tf.TensorSpec([None], tf.string, "text"),)
TEXT_PAIR_SIGNATURE = (
    tf.TensorSpec([None], tf.string, "text_a"),
    tf.TensorSpec([None], tf.string, "text_b"),
)


@dataclasses.dataclass(frozen=True)
class ServingFunction:
    """One signature function of a task.

    Attributes:
        kind: the signature's name without the task suffix ("serve", "serve_text", ...).
        fn: the function (traced with `input_signature`, autograph off).
        input_signature: its `tf.TensorSpec`s, named after its arguments.
    """

    kind: str
    fn: Callable[..., dict[str, tf.Tensor]]
    input_signature: Sequence[tf.TensorSpec]


@dataclasses.dataclass(frozen=True)
class ServingContext:
    """What the serving functions share: the encoder, the in-graph tokenizers, the vocab.

    Attributes:
        max_seq_length: the padding length of the text signatures (QA: the window length).
        special_ids: the "cls", "sep" and "pad" ids (`electra_tf.packing`'s `ids`).
        unk_id: the [UNK] id.
        vocab_tokens: string [vocab]: the token of each id.
        encode: (input_ids, input_mask, segment_ids) -> float32 sequence output, checked
            against max_position_embeddings.
        tokenizer: lower_case -> the `GraphTokenizer` (one per setting, saved with the vocab).
    """

    max_seq_length: int
    special_ids: dict[str, int]
    unk_id: int
    vocab_tokens: tf.Tensor
    encode: Callable[[tf.Tensor, tf.Tensor, tf.Tensor], tf.Tensor]
    tokenizer: Callable[[bool], Any]
