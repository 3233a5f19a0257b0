"""`FullTokenizer`: the reference's interface and exact ids, computed with tensorflow-text."""

import tensorflow as tf
import tensorflow_text as tf_text

from electra_tf.errors import UserError
from electra_tf.tokenization.fast_wordpiece import fast_wordpiece
from electra_tf.tokenization.graph_tokenizer import GraphTokenizer, load_vocab_checked
from electra_tf.tokenization.reference import MAX_CHARS_PER_WORD, BasicTokenizer, ReferenceTokenizer
from electra_tf.vocab import UNK

# Control characters (Cc) but tab, newline and carriage return: what `_clean_text` drops from
# ASCII text (as RE2 character classes).
_ASCII_DROPPED_RE = "[\\x00-\\x08\\x0b\\x0c\\x0e-\\x1f\\x7f]"


class FullTokenizer:
    """BERT tokenizer with the reference's exact ids, computed with tensorflow-text.

    Same interface as `ReferenceTokenizer`; `tokenize_to_ids` is batched and fast.

    Args:
        vocab_file: WordPiece vocab, one token per line (id = line index).
        do_lower_case: lower-case the text (BERT uncased).
        strip_accents: strip accents after lower-casing (never without lower-casing).

    Example:
        >>> tok = FullTokenizer("data/vocab/vocab.txt")
        >>> tok.tokenize("Héllo, World!")
        ['hello', ',', 'world', '!']

    `tokenize_to_ids` runs eagerly (no tf.function to trace: a new process, e.g. a dataset-building
    worker, starts in well under a second) along two paths:
      * ASCII strings (most English text): control characters dropped with a regex, ASCII
        lower-casing, then FastWordpieceTokenizer's own BERT pre-tokenization (split on whitespace
        and punctuation, which for ASCII are exactly BERT's; a word over 200 bytes, i.e. 200
        characters, is `[UNK]`). No per-character tables are needed.
      * other strings: `GraphTokenizer`'s computation (the per-character tables, loaded from the
        disk cache, see `normalization_tables.load_tables`), run eagerly.
    Strings that cannot be UTF-8 encoded (lone surrogates) go through the reference tokenizer.
    """

    batch_size = 8192

    def __init__(self, vocab_file: str, do_lower_case: bool = True, strip_accents: bool = True):
        self.vocab = load_vocab_checked(vocab_file)
        if UNK not in self.vocab:
            raise UserError(f"vocab file {vocab_file} has no {UNK} token")
        self.inv_vocab = {v: k for k, v in self.vocab.items()}
        self.vocab_file = vocab_file
        self.do_lower_case = do_lower_case
        self.strip_accents = strip_accents
        self.basic_tokenizer = BasicTokenizer(do_lower_case, strip_accents)
        self._graph_tokenizer: GraphTokenizer | None = None  # built when first needed
        self._ascii_wordpiece: tf_text.FastWordpieceTokenizer | None = None
        self._reference: ReferenceTokenizer | None = None

    @property
    def graph_tokenizer(self) -> GraphTokenizer:
        """The in-graph tokenizer (a tf.Module) for tf.function / SavedModel signatures."""
        if self._graph_tokenizer is None:
            self._graph_tokenizer = GraphTokenizer(
                self.vocab_file, self.do_lower_case, self.strip_accents, vocab=self.vocab
            )
        return self._graph_tokenizer

    def tokenize(self, text: str) -> list[str]:
        return self.convert_ids_to_tokens(self.tokenize_to_ids([text])[0])

    def convert_tokens_to_ids(self, tokens: list[str]) -> list[int]:
        return [self.vocab[t] for t in tokens]

    def convert_ids_to_tokens(self, ids: list[int]) -> list[str]:
        return [self.inv_vocab[i] for i in ids]

    def tokenize_to_ids(self, texts: list[str]) -> list[list[int]]:
        ascii_rows, ascii_bytes, other_rows, other_bytes, fallback = [], [], [], [], []
        for i, text in enumerate(texts):
            if text.isascii():
                ascii_rows.append(i)
                ascii_bytes.append(text.encode("ascii"))
                continue
            try:
                other_bytes.append(text.encode("utf-8"))
                other_rows.append(i)
            except UnicodeEncodeError:  # lone surrogates: the reference path, for this string only
                fallback.append(i)
        result: list[list[int]] = [[] for _ in texts]
        for rows, encoded, tokenize in (
            (ascii_rows, ascii_bytes, self._tokenize_ascii),
            (other_rows, other_bytes, self._tokenize_unicode),
        ):
            for start in range(0, len(encoded), self.batch_size):
                ids = tokenize(tf.constant(encoded[start : start + self.batch_size]))
                values = ids.flat_values.numpy().tolist()
                splits = ids.row_splits.numpy().tolist()
                for i, a, b in zip(rows[start:], splits, splits[1:]):
                    result[i] = values[a:b]
        if fallback:
            if self._reference is None:
                self._reference = ReferenceTokenizer.from_vocab(
                    self.vocab, self.inv_vocab, self.basic_tokenizer
                )
            for i in fallback:
                result[i] = self._reference.tokenize_to_ids([texts[i]])[0]
        return result

    def _tokenize_ascii(self, strings: tf.Tensor) -> tf.RaggedTensor:
        """[batch] ASCII strings -> ids (see the class docstring)."""
        if self._ascii_wordpiece is None:
            self._ascii_wordpiece = fast_wordpiece(self.vocab, UNK, MAX_CHARS_PER_WORD, False)
        strings = tf.strings.regex_replace(strings, _ASCII_DROPPED_RE, "")
        if self.do_lower_case:
            strings = tf.strings.lower(strings)  # ASCII only (no encoding given)
        return self._ascii_wordpiece.tokenize(strings)

    def _tokenize_unicode(self, strings: tf.Tensor) -> tf.RaggedTensor:
        return self.graph_tokenizer._tokenize(strings)
