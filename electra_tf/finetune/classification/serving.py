"""The SavedModel signatures of a GLUE task (see `export_model.py` for their outputs).

`serve(input_ids, input_mask, segment_ids)`, `serve_text(text)` and
`serve_text_pair(text_a, text_b)`: the text is tokenized in the graph and packed as the runner
packs it (`electra_tf.packing`); classification gives `logits`, `probabilities`, `label_id` and
`label`, regression `prediction` on the data's scale.
"""

from collections.abc import Sequence
from typing import Any, Optional

import keras
import tensorflow as tf

from electra_tf import packing
from electra_tf.finetune.classification.head import pool
from electra_tf.finetune.serving import (
    IDS_SIGNATURE,
    TEXT_PAIR_SIGNATURE,
    TEXT_SIGNATURE,
    ServingContext,
    ServingFunction,
)


def serving_functions(
    head: keras.layers.Layer,
    tokenizer: Any,
    context: ServingContext,
    labels: Optional[Sequence[str]],
    scale: float = 5.0,
) -> list[ServingFunction]:
    """The signature functions of a `ClassificationHead` (`labels`: its label strings) or, with
    `labels` None, a `RegressionHead` whose predictions are multiplied by `scale`."""
    label_strings = None if labels is None else tf.constant(list(labels))

    def outputs(input_ids, input_mask, segment_ids):
        # the pooled vector does not depend on trailing padding: compute without it
        trimmed = packing.trim_to_longest(
            {"input_ids": input_ids, "input_mask": input_mask, "segment_ids": segment_ids}
        )
        input_mask = trimmed["input_mask"]
        seq = context.encode(**trimmed)
        logits = tf.cast(head.dense(pool(seq, input_mask, head.pooling)), tf.float32)
        if label_strings is None:
            # as the runner's predictions: back on the data's scale (STS: 0..5)
            return {"prediction": tf.squeeze(logits, -1) * scale}
        label_id = tf.argmax(logits, axis=-1, output_type=tf.int32)
        return {
            "logits": logits,
            "probabilities": tf.nn.softmax(logits, axis=-1),
            "label_id": label_id,
            "label": tf.gather(label_strings, label_id),
        }

    def packed_outputs(a, b):
        features = packing.pack_and_pad_ragged(a, b, context.max_seq_length, context.special_ids)
        return {**features, **outputs(**features)}

    def text(text):
        return packed_outputs(tokenizer.tokenize(text), None)

    def text_pair(text_a, text_b):
        # a row with an empty text_b is packed as a single sentence, as the runner packs it
        a = tokenizer.tokenize(text_a)
        length, ids = context.max_seq_length, context.special_ids
        pair = packing.pack_and_pad_ragged(a, tokenizer.tokenize(text_b), length, ids)
        single = packing.pack_and_pad_ragged(a, None, length, ids)
        has_b = (tf.strings.length(text_b) > 0)[:, tf.newaxis]
        features = {k: tf.where(has_b, pair[k], single[k]) for k in pair}
        return {**features, **outputs(**features)}

    return [
        ServingFunction("serve", outputs, IDS_SIGNATURE),
        ServingFunction("serve_text", text, TEXT_SIGNATURE),
        ServingFunction("serve_text_pair", text_pair, TEXT_PAIR_SIGNATURE),
    ]
