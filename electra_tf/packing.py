"""`[CLS] a [SEP] (b [SEP])` packing, in Python (data preparation) and in the graph (serving).

One piece of code for the layout every consumer shares: pretraining examples, classification and
regression pairs, tagging sentences, QA windows and the SavedModel text signatures. Segment ids are
0 for `[CLS] a [SEP]` and 1 for `b [SEP]`; the input mask is 1 on real tokens; padding is 0.
"""

from typing import Dict, List, Optional, Sequence, Tuple, TypeVar

import tensorflow as tf

T = TypeVar("T")


def truncate_pair(a: List, b: List, max_tokens: int) -> None:
    """BERT's rule: pop from the end of the longer list (b on ties) until both fit, in place."""
    while len(a) + len(b) > max_tokens:
        (a if len(a) > len(b) else b).pop()


def pack(segments: Sequence[Sequence[T]], cls: T, sep: T) -> Tuple[List[T], List[int]]:
    """(`[CLS] s0 [SEP] s1 [SEP] ...`, segment ids: 0 up to the first `[SEP]`, then 1)."""
    items = [cls, *segments[0], sep]
    segment_ids = [0] * len(items)
    for segment in segments[1:]:
        items += [*segment, sep]
        segment_ids += [1] * (len(segment) + 1)
    return items, segment_ids


def pad(values: Sequence[int], length: int, value: int = 0) -> List[int]:
    """`values` followed by `value` up to `length`."""
    return list(values) + [value] * (length - len(values))


def pack_and_pad(
    a: Sequence[int], b: Optional[Sequence[int]], max_length: int, cls_id: int, sep_id: int
) -> Tuple[List[int], List[int], List[int]]:
    """(input_ids, input_mask, segment_ids) of length `max_length` for one example: `a` cut to
    `max_length - 2` ids, or a pair truncated by `truncate_pair` to `max_length - 3`."""
    a = list(a)
    if b is None:
        ids, segment_ids = pack([a[: max_length - 2]], cls_id, sep_id)
    else:
        b = list(b)
        truncate_pair(a, b, max_length - 3)
        ids, segment_ids = pack([a, b], cls_id, sep_id)
    return pad(ids, max_length), pad([1] * len(ids), max_length), pad(segment_ids, max_length)


# -- in the graph ----------------------------------------------------------------------------------


def pad_ragged(input_ids, segment_ids, length: int, pad_id: int) -> Dict[str, tf.Tensor]:
    """Ragged ids and segments [batch, (tokens)] -> `input_ids`, `input_mask`, `segment_ids`
    int32 [batch, length]."""
    shape = tf.stack([input_ids.nrows(), tf.constant(length, tf.int64)])
    return {
        "input_ids": input_ids.to_tensor(pad_id, shape=shape),
        "input_mask": tf.ones_like(input_ids).to_tensor(0, shape=shape),
        "segment_ids": segment_ids.to_tensor(0, shape=shape),
    }


def pack_ragged(segments, length: int, ids: Dict[str, int]) -> Dict[str, tf.Tensor]:
    """In-graph `pack` + `pad_ragged` of ragged int32 id segments [batch, (tokens)] (already cut
    to fit); `ids` holds the "cls", "sep" and "pad" ids."""
    rows = segments[0].nrows()
    cls = tf.RaggedTensor.from_tensor(tf.fill([rows, 1], tf.constant(ids["cls"], tf.int32)))
    sep = tf.RaggedTensor.from_tensor(tf.fill([rows, 1], tf.constant(ids["sep"], tf.int32)))
    parts, segment_of = [cls, segments[0], sep], [0, 0, 0]
    for segment in segments[1:]:
        parts += [segment, sep]
        segment_of += [1, 1]
    input_ids = tf.concat(parts, axis=1)
    segment_ids = tf.concat([tf.ones_like(p) * s for p, s in zip(parts, segment_of)], axis=1)
    return pad_ragged(input_ids, segment_ids, length, ids["pad"])


def pack_and_pad_ragged(a, b, length: int, ids: Dict[str, int]) -> Dict[str, tf.Tensor]:
    """The graph version of `pack_and_pad` for a batch of ragged id rows (b None: single)."""
    if b is None:
        return pack_ragged([a[:, : length - 2]], length, ids)
    # truncate_pair in closed form: pop from the longer (b on ties) until the pair fits
    budget = tf.constant(length - 3, tf.int64)
    la, lb = a.row_lengths(), b.row_lengths()
    over = la + lb > budget
    keep_a = tf.where(over, tf.minimum(la, tf.maximum(budget - lb, (budget + 1) // 2)), la)
    keep_b = tf.where(over, tf.minimum(lb, budget - keep_a), lb)
    a = tf.ragged.boolean_mask(a, tf.ragged.range(la) < keep_a[:, None])
    b = tf.ragged.boolean_mask(b, tf.ragged.range(lb) < keep_b[:, None])
    return pack_ragged([a, b], length, ids)


def trim_to_longest(features: Dict[str, tf.Tensor]) -> Dict[str, tf.Tensor]:
    """[batch, length] features cut after the batch's longest `input_mask` row: what a serving
    function computes on, so that a request pays for its own length, not the padding."""
    longest = tf.reduce_max(tf.reduce_sum(features["input_mask"], axis=1))
    return {k: v[:, :longest] for k, v in features.items()}
