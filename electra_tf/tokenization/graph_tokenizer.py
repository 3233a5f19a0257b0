"""`GraphTokenizer`: BERT tokenization with the reference's exact ids, as TensorFlow ops.

Per code point, the normalisation tables (`normalization_tables`) give what BasicTokenizer turns it
into; the context-dependent parts (Python's final sigma, NFD's canonical reordering) are computed
here; then whitespace split, words over 200 characters -> [UNK], and FastWordpieceTokenizer on the
words. The only Python fallback is in `FullTokenizer` (strings that cannot be UTF-8 encoded).
"""

import os

import tensorflow as tf

from electra_tf.errors import UserError
from electra_tf.tokenization.fast_wordpiece import fast_wordpiece
from electra_tf.tokenization.normalization_tables import (
    CAPITAL_SIGMA,
    IDENTITY,
    ROW_FINAL_SIGMA,
    load_tables,
)
from electra_tf.tokenization.reference import MAX_CHARS_PER_WORD
from electra_tf.vocab import UNK, load_vocab


def load_vocab_checked(vocab_file: str) -> dict[str, int]:
    """`load_vocab`, with a one-line error for a missing or empty file."""
    if not vocab_file or not os.path.isfile(vocab_file):
        raise UserError(f"vocab file not found: {vocab_file!r}")
    vocab = load_vocab(vocab_file)
    if not vocab:
        raise UserError(f"vocab file is empty: {vocab_file}")
    return vocab


class GraphTokenizer(tf.Module):
    """BERT tokenization (the reference's exact ids) as TensorFlow ops, for tf.function/SavedModel.

    Args:
        vocab_file: WordPiece vocab, one token per line (id = line index); tracked as an asset.
        do_lower_case: lower-case (and, with `strip_accents`, strip accents) like BERT uncased.
        strip_accents: drop combining marks after NFD (only when lower-casing, as the original).
        unk_token: the vocab's unknown token (also what a word over 200 characters becomes).
        name: the tf.Module's name.
        vocab: `load_vocab(vocab_file)` when the caller has it already (not read again).

    Example:
        >>> tok = GraphTokenizer("data/vocab/vocab.txt")
        >>> tok.tokenize(tf.constant(["Hello, world!"])).to_list()
        [[7592, 1010, 2088, 999]]

    The signature functions need `import tensorflow_text` in the process that loads them.
    """

    def __init__(
        self,
        vocab_file: str,
        do_lower_case: bool = True,
        strip_accents: bool = True,
        unk_token: str = UNK,
        name: str | None = None,
        vocab: dict[str, int] | None = None,
    ):
        super().__init__(name=name)
        vocab = vocab or load_vocab_checked(vocab_file)
        if unk_token not in vocab:
            raise UserError(f"vocab file {vocab_file} has no {unk_token} token")
        self.do_lower_case = bool(do_lower_case)
        self.strip_accents = bool(strip_accents)
        self.unk_token = unk_token
        self.vocab_file = tf.saved_model.Asset(vocab_file)
        for key, value in load_tables(self.do_lower_case, self.strip_accents).items():
            setattr(self, f"_{key}", tf.Variable(value, trainable=False, name=key))
        self._wordpiece = fast_wordpiece(vocab, unk_token, 4 * MAX_CHARS_PER_WORD, True)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def basic_tokenize(self, strings: tf.Tensor) -> tf.RaggedTensor:
        """[batch] UTF-8 strings -> words after BasicTokenizer, RaggedTensor[string]
        [batch, (words)]."""
        return self._basic_tokenize(strings)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def tokenize(self, strings: tf.Tensor) -> tf.RaggedTensor:
        """[batch] UTF-8 strings -> WordPiece ids, RaggedTensor[int32] [batch, (tokens)]."""
        return self._tokenize(strings)

    def _tokenize(self, strings: tf.Tensor) -> tf.RaggedTensor:
        """`tokenize`'s computation; also run eagerly by `FullTokenizer` (no tracing to pay)."""
        words = self._basic_tokenize(strings)
        flat = words.flat_values
        too_long = tf.strings.length(flat, unit="UTF8_CHAR") > MAX_CHARS_PER_WORD
        flat = tf.where(too_long, tf.constant(self.unk_token), flat)  # [UNK] -> its own id
        pieces = self._wordpiece.tokenize(flat)
        return words.with_flat_values(pieces).merge_dims(1, 2)

    def _basic_tokenize(self, strings: tf.Tensor) -> tf.RaggedTensor:
        cps = tf.strings.unicode_decode(strings, "UTF-8", errors="replace", replacement_char=0xFFFD)
        flat_cps = cps.flat_values
        rows = tf.gather(self._row_index, flat_cps)
        flags = tf.cast(tf.gather(self._flags, flat_cps), tf.int32)
        if self.do_lower_case:
            rows = tf.cond(
                tf.reduce_any(tf.equal(flat_cps, CAPITAL_SIGMA)),
                lambda: self._final_sigma(flat_cps, cps.value_rowids(), rows, flags % 4),
                lambda: rows,
            )
        if self.do_lower_case and self.strip_accents:
            chars = tf.cond(
                tf.reduce_any(flags >= 4),
                lambda: self._expand_with_reordering(cps, rows),
                lambda: self._expand(cps, rows, self._fast_values, self._fast_splits),
            )
        else:
            chars = self._expand(cps, rows, self._fast_values, self._fast_splits)
        text = tf.strings.unicode_encode(chars, "UTF-8")
        return tf.strings.split(text)

    @staticmethod
    def _expand(
        cps: tf.RaggedTensor, rows: tf.Tensor, row_values: tf.Tensor, row_splits: tf.Tensor
    ) -> tf.RaggedTensor:
        """Replaces every code point by its expansion row ([batch, (chars)] -> same, new chars)."""
        flat_cps = cps.flat_values
        row_starts = tf.gather(row_splits, rows)
        lengths = tf.gather(row_splits, rows + 1) - row_starts
        ends = tf.cumsum(lengths)
        owner = tf.repeat(tf.range(tf.size(rows, out_type=tf.int64)), lengths)
        offset = tf.range(tf.reduce_sum(lengths)) - tf.gather(ends - lengths, owner)
        values = tf.gather(row_values, tf.gather(row_starts, owner) + offset)
        values = tf.where(values == IDENTITY, tf.gather(flat_cps, owner), values)
        splits = tf.gather(tf.concat([tf.zeros([1], tf.int64), ends], 0), cps.row_splits)
        return tf.RaggedTensor.from_row_splits(values, splits, validate=False)

    def _expand_with_reordering(self, cps: tf.RaggedTensor, rows: tf.Tensor) -> tf.RaggedTensor:
        """NFD with its canonical reordering (a stable sort by combining class within runs of
        marks), then combining marks (Mn) dropped: `_run_strip_accents` on whole words."""
        chars = self._expand(cps, rows, self._kept_values, self._kept_splits)
        values = chars.flat_values
        string_ids = chars.value_rowids()
        props = tf.cast(tf.gather(self._props, values), tf.int64)
        ccc = props % 256
        index = tf.range(tf.size(values, out_type=tf.int64))
        prev_ccc = tf.concat([tf.zeros([1], tf.int64), ccc[:-1]], 0)
        prev_string = tf.concat([tf.fill([1], tf.constant(-1, tf.int64)), string_ids[:-1]], 0)
        is_start = tf.equal(ccc, 0) | tf.equal(prev_ccc, 0) | tf.not_equal(prev_string, string_ids)
        starts = tf.boolean_mask(index, is_start)
        anchor = tf.gather(starts, tf.cumsum(tf.cast(is_start, tf.int64)) - 1)
        order = tf.argsort(anchor * 256 + ccc, stable=True)
        keep = tf.gather(props, order) < 256  # not Mn
        values = tf.boolean_mask(tf.gather(values, order), keep)
        string_ids = tf.boolean_mask(tf.gather(string_ids, order), keep)
        return tf.RaggedTensor.from_value_rowids(
            values, string_ids, nrows=chars.nrows(), validate=False
        )

    def _final_sigma(
        self, cps: tf.Tensor, string_ids: tf.Tensor, rows: tf.Tensor, cls: tf.Tensor
    ) -> tf.Tensor:
        """Python's `str.lower` context rule: U+03A3 -> final sigma when preceded by a cased letter
        and not followed by one (skipping case-ignorable and dropped characters; whitespace ends
        the word). Only the sigma positions are examined."""
        not_ignorable = tf.not_equal(cls, 2)
        positions = tf.where(not_ignorable)[:, 0]  # non-ignorable positions, ascending
        count = tf.cumsum(tf.cast(not_ignorable, tf.int64))
        num = tf.size(positions, out_type=tf.int64)
        sigma = tf.where(tf.equal(cps, CAPITAL_SIGMA))[:, 0]
        own = tf.gather(count, sigma) - 1  # positions[own] == sigma
        sigma_string = tf.gather(string_ids, sigma)

        def cased_at(k: tf.Tensor) -> tf.Tensor:
            pos = tf.gather(positions, tf.clip_by_value(k, 0, num - 1))
            return (
                (k >= 0)
                & (k < num)
                & tf.equal(tf.gather(string_ids, pos), sigma_string)
                & tf.equal(tf.gather(cls, pos), 1)
            )

        final = cased_at(own - 1) & ~cased_at(own + 1)
        updates = tf.fill(tf.shape(sigma), tf.constant(ROW_FINAL_SIGMA, rows.dtype))
        return tf.tensor_scatter_nd_update(
            rows, tf.boolean_mask(sigma, final)[:, None], tf.boolean_mask(updates, final)
        )
