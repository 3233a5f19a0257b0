"""The SavedModel signatures of a tagging task (see `export_model.py` for their outputs).

`serve(input_ids, input_mask, segment_ids)` gives the tags at every position; `serve_text(text)`
splits the text into whitespace words, tokenizes them in the graph, keeps the words that fit
whole in `[CLS] ... [SEP]` (as the runner) and tags each on its first sub-token.
"""

from collections.abc import Sequence
from typing import Any

import keras
import tensorflow as tf

from electra_tf import packing
from electra_tf.finetune.serving import (
    IDS_SIGNATURE,
    TEXT_SIGNATURE,
    ServingContext,
    ServingFunction,
)


def serving_functions(
    head: keras.layers.Layer, tokenizer: Any, context: ServingContext, label_list: Sequence[str]
) -> list[ServingFunction]:
    """The signature functions of a `TaggingHead` whose outputs index `label_list`."""
    tags = tf.constant(list(label_list))
    n = context.max_seq_length

    def outputs(input_ids, input_mask, segment_ids):
        seq = context.encode(input_ids, input_mask, segment_ids)
        logits = tf.cast(head.dense(seq), tf.float32)  # every position
        tag_ids = tf.argmax(logits, axis=-1, output_type=tf.int32)
        return {"tag_logits": logits, "tag_ids": tag_ids, "tags": tf.gather(tags, tag_ids)}

    def text(text):
        # CoNLL words: whitespace-separated; each word is labelled on its first sub-token
        words = tf.strings.split(text)
        pieces = tokenizer.tokenize(words.flat_values)
        unk = tf.fill([pieces.nrows(), 1], tf.constant(context.unk_id, tf.int32))
        empty = tf.equal(pieces.row_lengths(), 0)[:, None]  # such a word becomes [UNK]
        pieces = tf.concat([pieces, tf.ragged.boolean_mask(unk, empty)], axis=1)
        lengths = words.with_flat_values(tf.cast(pieces.row_lengths(), tf.int32))
        # sub-tokens up to and including each word
        ends = tf.RaggedTensor.from_tensor(
            tf.math.cumsum(lengths.to_tensor(0), axis=1), lengths=lengths.row_lengths()
        )
        keep = ends + 2 <= n  # [CLS] ... [SEP]: the runner keeps a word only if it all fits
        words = tf.ragged.boolean_mask(words, keep)
        positions = tf.ragged.boolean_mask(ends - lengths + 1, keep)
        kept = words.with_flat_values(tf.ragged.boolean_mask(pieces, keep.flat_values)).merge_dims(
            1, 2
        )
        rows = kept.nrows()
        f = packing.pack_ragged([kept], n, context.special_ids)
        f["segment_ids"] = f["input_mask"]  # the original's quirk: 1 on every real token
        seq = context.encode(**f)
        width = tf.cast(
            tf.reduce_max(tf.concat([words.row_lengths(), tf.zeros([1], tf.int64)], 0)),
            tf.int64,
        )
        shape = tf.stack([rows, width])
        pos = positions.to_tensor(0, shape=shape)
        logits = tf.cast(head.dense(tf.gather(seq, pos, batch_dims=1)), tf.float32)
        tag_ids = tf.argmax(logits, axis=-1, output_type=tf.int32)
        valid = tf.ones_like(positions, tf.bool).to_tensor(False, shape=shape)
        return {
            **f,
            "words": words.to_tensor("", shape=shape),
            "num_words": tf.cast(words.row_lengths(), tf.int32),
            "tag_logits": logits,
            "tag_ids": tf.where(valid, tag_ids, -1),
            "tags": tf.where(valid, tf.gather(tags, tag_ids), ""),
        }

    return [
        ServingFunction("serve", outputs, IDS_SIGNATURE),
        ServingFunction("serve_text", text, TEXT_SIGNATURE),
    ]
