"""tensorflow-text's FastWordpieceTokenizer on a BERT vocab, its model built once and cached.

The model is built with `tf_text.build_fast_wordpiece_model` (public and documented as
`text.build_fast_wordpiece_model`; the builder `FastWordpieceTokenizer(vocab=...)` itself calls)
and handed over as a uint8 tensor, because the constructor's own path converts the buffer with
`tf.constant(list(buffer))`, which is slow.
"""

import hashlib
import os

import numpy as np
import tensorflow as tf
import tensorflow_text as tf_text

from electra_tf.tokenization.cache import cache_file, write_cache_file

_MODEL_CACHE: dict[tuple, tf.Tensor] = {}


def fast_wordpiece(
    vocab: dict[str, int], unk_token: str, max_bytes_per_word: int, no_pretokenization: bool
) -> tf_text.FastWordpieceTokenizer:
    """FastWordpieceTokenizer (int32 ids) on `wordpiece_vocab_list(vocab)`, its model cached in
    this process and in a file (its sha256 appended and checked)."""
    tokens = "\n".join(vocab).encode()  # (tokens never hold a newline)
    vocab_digest = hashlib.sha256(tokens + np.fromiter(vocab.values(), np.int64).tobytes())
    key = (vocab_digest.hexdigest(), unk_token, max_bytes_per_word, no_pretokenization)
    model = _MODEL_CACHE.get(key)
    path = cache_file("wordpiece_model", *key)
    if model is None and path is not None and os.path.isfile(path + ".bin"):
        with open(path + ".bin", "rb") as f:
            data = f.read()
        if len(data) > 32 and hashlib.sha256(data[:-32]).digest() == data[-32:]:
            model = tf.constant(np.frombuffer(data[:-32], np.uint8))
    if model is None:
        buffer = tf_text.build_fast_wordpiece_model(
            wordpiece_vocab_list(vocab), max_bytes_per_word, "##", unk_token,
            no_pretokenization, False,
        )  # fmt: skip
        model = tf.constant(np.frombuffer(buffer, np.uint8))  # (not `list(buffer)`: slow)
        if path is not None:
            write_cache_file(
                path + ".bin", lambda f: f.write(buffer + hashlib.sha256(buffer).digest())
            )
    _MODEL_CACHE[key] = model
    return tf_text.FastWordpieceTokenizer(model_buffer=model, token_out_type=tf.int32)


def wordpiece_vocab_list(vocab: dict[str, int]) -> list[str]:
    """The vocab as a list by id; ids the reference never emits become unmatchable placeholders.

    (A duplicated token keeps its last id in `load_vocab`; an empty line or a bare "##" can never
    be matched by the reference. FastWordpieceTokenizer needs unique, non-empty tokens.)
    """
    size = max(vocab.values()) + 1 if vocab else 0
    tokens = [f"[electra_tf placeholder {i}]" for i in range(size)]
    for token, index in vocab.items():
        if token != "##" and token.split() == [token]:  # non-empty, no whitespace
            tokens[index] = token
    return tokens
