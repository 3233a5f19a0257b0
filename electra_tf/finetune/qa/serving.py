"""The SavedModel signatures of a QA task (see `export_model.py` for their outputs).

`serve(input_ids, input_mask, segment_ids)` gives the head's raw beam; `serve_qa(question,
context)` tokenizes in the graph, packs `[CLS] question [SEP] context [SEP]` in ONE window of
max_seq_length (`electra_tf.packing`; unlike the runner's sliding windows, the rest of a long
context is not searched) and picks the best span of the beam with the offline decoder's rules.
"""

from typing import Any

import keras
import numpy as np
import tensorflow as tf

from electra_tf import packing
from electra_tf.errors import UserError
from electra_tf.finetune.serving import IDS_SIGNATURE, ServingContext, ServingFunction

QA_SIGNATURE = (
    tf.TensorSpec([None], tf.string, "question"),
    tf.TensorSpec([None], tf.string, "context"),
)
BEAM_KEYS = ("start_top_log_probs", "start_top_index", "end_top_log_probs", "end_top_index")


def masked_rows(values: tf.Tensor, lo: tf.Tensor, hi: tf.Tensor) -> tf.RaggedTensor:
    """values[b, lo[b] : hi[b] + 1] for each row, ragged (empty where hi < lo)."""
    pos = tf.range(tf.shape(values)[1])[None, :]
    return tf.ragged.boolean_mask(values, (pos >= lo[:, None]) & (pos <= hi[:, None]))


def serving_functions(
    head: keras.layers.Layer,
    tokenizer: Any,
    ctx: ServingContext,
    max_query: int,
    max_answer: int,
    threshold: float,
    v2: bool,
) -> list[ServingFunction]:
    """The signature functions of a `QAHead`: questions cut to `max_query` sub-tokens, answers
    of at most `max_answer`, unanswerable (`v2`) where the null score exceeds `threshold`.
    (`ctx`, not `context`: that is serve_qa's argument, and a signature's inputs are named after
    the function's arguments.)"""
    n = ctx.max_seq_length
    classifier = bool(head.answerable_classifier)
    if n - max_query - 3 < 1:
        raise UserError(
            f"max_seq_length {n} leaves no room for the context after max_query_length {max_query}"
        )
    if head.beam_size > n:
        raise UserError(f"beam_size {head.beam_size} exceeds max_seq_length {n}")

    def outputs(input_ids, input_mask, segment_ids):
        seq = ctx.encode(input_ids, input_mask, segment_ids)
        out = head.predict_spans(seq, input_mask, segment_ids, training=False)
        return {k: out[k] for k in BEAM_KEYS + ("start_logits", "answerable_logit")}

    def qa(question, context):
        q = tokenizer.tokenize(question)[:, :max_query]
        words = tf.strings.split(context)  # the original's doc tokens (whitespace words)
        inner = tokenizer.tokenize(words.flat_values)  # [words, (sub-tokens)]
        doc = words.with_flat_values(inner).merge_dims(1, 2)
        # the (batch-global) word index of each sub-token
        word_of = doc.with_flat_values(tf.cast(inner.value_rowids(), tf.int32))
        budget = n - 3 - q.row_lengths()
        keep = tf.ragged.range(doc.row_lengths()) < budget[:, None]
        doc = tf.ragged.boolean_mask(doc, keep)
        word_of = tf.ragged.boolean_mask(word_of, keep)
        rows = q.nrows()
        f = packing.pack_ragged([q, doc], n, ctx.special_ids)
        seq = ctx.encode(**f)
        out = head.predict_spans(seq, f["input_mask"], f["segment_ids"], training=False)
        # candidates (i, j) of the beam: inside the context, end >= start, length <= max
        first = tf.cast(q.row_lengths(), tf.int32) + 2  # the first context position
        last = first + tf.cast(doc.row_lengths(), tf.int32) - 1
        start = out["start_top_index"][:, :, None]  # [B, K, 1]
        end = out["end_top_index"]  # [B, K, K]
        lo, hi = first[:, None, None], last[:, None, None]
        ok = (start >= lo) & (start <= hi) & (end >= start) & (end <= hi)
        ok &= end - start + 1 <= max_answer
        scores = out["start_top_log_probs"][:, :, None] + out["end_top_log_probs"]
        scores = tf.reshape(tf.where(ok, scores, -np.inf), [rows, -1])
        best = tf.argmax(scores, axis=-1, output_type=tf.int32)
        score = tf.gather(scores, best, batch_dims=1)
        found = tf.math.is_finite(score)
        k = tf.shape(end)[1]
        best_start = tf.gather(out["start_top_index"], best // k, batch_dims=1)
        best_end = tf.gather(tf.reshape(end, [rows, -1]), best, batch_dims=1)
        best_start = tf.where(found, best_start, 1)
        best_end = tf.where(found, best_end, 0)  # empty span
        span = masked_rows(f["input_ids"], best_start, best_end)
        tokens = tf.ragged.map_flat_values(tf.gather, ctx.vocab_tokens, span)
        # as the offline decoder's tok_text: join, glue "##" pieces
        answer = tf.strings.reduce_join(tokens, axis=-1, separator=" ")
        answer = tf.strings.regex_replace(answer, " ##", "")
        answer = tf.strings.strip(tf.strings.regex_replace(answer, "##", ""))
        # the whole context words the span lies in (original case and punctuation)
        word_of = word_of.to_tensor(0, shape=tf.stack([rows, tf.constant(n, tf.int64)]))
        w0 = tf.gather(word_of, tf.maximum(best_start - first, 0), batch_dims=1)
        w1 = tf.gather(word_of, tf.maximum(best_end - first, 0), batch_dims=1)
        w0 = tf.where(found, w0 - tf.cast(words.row_starts(), tf.int32), 1)
        w1 = tf.where(found, w1 - tf.cast(words.row_starts(), tf.int32), 0)
        word_span = tf.ragged.boolean_mask(
            words,
            (tf.ragged.range(words.row_lengths()) >= tf.cast(w0, tf.int64)[:, None])
            & (tf.ragged.range(words.row_lengths()) <= tf.cast(w1, tf.int64)[:, None]),
        )
        if classifier:
            null_score = out["answerable_logit"]
        else:  # as the offline decoder without the classifier
            null_score = out["start_logits"][:, 0] + out["end_logits"][:, 0] - score
        has_answer = found & (null_score <= threshold) if v2 else found
        return {
            "answer": answer,
            "answer_words": tf.strings.reduce_join(word_span, axis=-1, separator=" "),
            "score": score,
            "null_score": null_score,
            "has_answer": has_answer,
            "start_position": tf.where(found, best_start, -1),
            "end_position": tf.where(found, best_end, -1),
            **f,
        }

    return [
        ServingFunction("serve", outputs, IDS_SIGNATURE),
        ServingFunction("serve_qa", qa, QA_SIGNATURE),
    ]
