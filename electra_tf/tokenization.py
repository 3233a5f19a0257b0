"""BERT WordPiece tokenization with the reference semantics.

Two implementations of one behaviour:
  * `BasicTokenizer` + `WordpieceTokenizer` (pure Python): the reference algorithm of BERT's
    tokenizer (lower-casing, accent stripping only when lower-casing, punctuation split, CJK
    spacing, control-character cleanup, `[UNK]` for words over 200 characters). It is the oracle
    in tests, the baseline in benchmarks, and what question answering uses to align answers.
  * `FullTokenizer`: the same ids, computed with tensorflow-text (see below).
"""

import collections
import functools
import hashlib
import itertools
import operator
import os
import sys
import tempfile
import unicodedata

import numpy as np
import tensorflow as tf
import tensorflow_text as tf_text
from absl import app, flags
from tensorflow_text.core.pybinds import pywrap_fast_wordpiece_tokenizer_model_builder

from electra_tf.errors import UserError, run_main

MAX_CHARS_PER_WORD = 200


def load_vocab(vocab_file: str) -> dict[str, int]:
    """Reads a vocab file (one token per line, id = line index) into an ordered dict."""
    vocab = collections.OrderedDict()
    with open(vocab_file, "r", encoding="utf-8") as f:
        for index, line in enumerate(f):
            token = line.strip()
            vocab[token] = index
    return vocab


def _is_whitespace(char: str) -> bool:
    if char in (" ", "\t", "\n", "\r"):
        return True
    return unicodedata.category(char) == "Zs"


def _is_control(char: str) -> bool:
    if char in ("\t", "\n", "\r"):
        return False
    return unicodedata.category(char).startswith("C")


def _is_punctuation(char: str) -> bool:
    cp = ord(char)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(char).startswith("P")


def _is_chinese_char(cp: int) -> bool:
    return (
        0x4E00 <= cp <= 0x9FFF
        or 0x3400 <= cp <= 0x4DBF
        or 0x20000 <= cp <= 0x2A6DF
        or 0x2A700 <= cp <= 0x2B73F
        or 0x2B740 <= cp <= 0x2B81F
        or 0x2B820 <= cp <= 0x2CEAF
        or 0xF900 <= cp <= 0xFAFF
        or 0x2F800 <= cp <= 0x2FA1F
    )


class BasicTokenizer:
    """Splits text into words and punctuation the way BERT's BasicTokenizer does."""

    def __init__(self, do_lower_case: bool = True, strip_accents: bool = True):
        self.do_lower_case = do_lower_case
        self.strip_accents = strip_accents

    def tokenize(self, text: str) -> list[str]:
        text = self._clean_text(text)
        text = self._tokenize_chinese_chars(text)
        tokens = []
        for token in text.strip().split():
            if self.do_lower_case:
                token = token.lower()
                if self.strip_accents:
                    token = self._run_strip_accents(token)
            tokens.extend(self._run_split_on_punc(token))
        return " ".join(tokens).split()

    @staticmethod
    def _run_strip_accents(text: str) -> str:
        text = unicodedata.normalize("NFD", text)
        return "".join(c for c in text if unicodedata.category(c) != "Mn")

    @staticmethod
    def _run_split_on_punc(text: str) -> list[str]:
        output: list[list[str]] = []
        start_new_word = True
        for char in text:
            if _is_punctuation(char):
                output.append([char])
                start_new_word = True
            else:
                if start_new_word:
                    output.append([])
                start_new_word = False
                output[-1].append(char)
        return ["".join(x) for x in output]

    @staticmethod
    def _tokenize_chinese_chars(text: str) -> str:
        output = []
        for char in text:
            if _is_chinese_char(ord(char)):
                output.extend((" ", char, " "))
            else:
                output.append(char)
        return "".join(output)

    @staticmethod
    def _clean_text(text: str) -> str:
        output = []
        for char in text:
            cp = ord(char)
            if cp == 0 or cp == 0xFFFD or _is_control(char):
                continue
            output.append(" " if _is_whitespace(char) else char)
        return "".join(output)


class WordpieceTokenizer:
    """Greedy longest-match-first WordPiece with the `##` continuation prefix."""

    def __init__(
        self,
        vocab: dict[str, int],
        unk_token: str = "[UNK]",
        max_input_chars_per_word: int = MAX_CHARS_PER_WORD,
    ):
        self.vocab = vocab
        self.unk_token = unk_token
        self.max_input_chars_per_word = max_input_chars_per_word

    def tokenize(self, text: str) -> list[str]:
        output = []
        for word in text.strip().split():
            if len(word) > self.max_input_chars_per_word:
                output.append(self.unk_token)
                continue
            pieces = []
            start = 0
            while start < len(word):
                end = len(word)
                piece = None
                while start < end:
                    candidate = word[start:end]
                    if start > 0:
                        candidate = "##" + candidate
                    if candidate in self.vocab:
                        piece = candidate
                        break
                    end -= 1
                if piece is None:
                    pieces = None
                    break
                pieces.append(piece)
                start = end
            output.extend(pieces if pieces is not None else [self.unk_token])
        return output


class ReferenceTokenizer:
    """Pure-Python BERT tokenizer (BasicTokenizer then WordPiece): the semantics we reproduce."""

    def __init__(self, vocab_file: str, do_lower_case: bool = True, strip_accents: bool = True):
        self.vocab = load_vocab(vocab_file)
        self.inv_vocab = {v: k for k, v in self.vocab.items()}
        self.basic_tokenizer = BasicTokenizer(do_lower_case, strip_accents)
        self.wordpiece_tokenizer = WordpieceTokenizer(self.vocab)

    def tokenize(self, text: str) -> list[str]:
        return [
            piece
            for word in self.basic_tokenizer.tokenize(text)
            for piece in self.wordpiece_tokenizer.tokenize(word)
        ]

    def convert_tokens_to_ids(self, tokens: list[str]) -> list[int]:
        return [self.vocab[t] for t in tokens]

    def convert_ids_to_tokens(self, ids: list[int]) -> list[str]:
        return [self.inv_vocab[i] for i in ids]

    def tokenize_to_ids(self, texts: list[str]) -> list[list[int]]:
        return [self.convert_tokens_to_ids(self.tokenize(t)) for t in texts]


# ---------------------------------------------------------------------------------------------
# tensorflow-text implementation.
#
# tensorflow-text's own normalisers (NFKC case folding, ICU's Unicode version, its notion of
# control characters) do not give BERT's results, so the BasicTokenizer step is done with lookup
# tables computed *from Python's own `str.lower`/`unicodedata`* (the reference's semantics, by
# construction), applied per code point in the graph:
#   row[cp] -> the code points that cp becomes (dropped, space, padded punctuation/CJK, lower-cased,
#   NFD-decomposed), then the only context-dependent parts of the reference are done in-graph:
#   Python's final-sigma rule of `str.lower` (U+03A3) and NFD's canonical reordering of combining
#   marks (only observable for the few Mc marks with a non-zero combining class). Then whitespace
#   split, words over 200 characters -> [UNK], and FastWordpieceTokenizer on the words.
# The only Python fallback: strings that cannot be UTF-8 encoded (lone surrogates) go through
# the reference tokenizer (see `FullTokenizer.tokenize_to_ids`).
# ---------------------------------------------------------------------------------------------

_NUM_CODEPOINTS = 0x110000
_IDENTITY = -1  # placeholder in an expansion row: "the code point itself"
_ROW_KEEP, _ROW_DROP, _ROW_SPACE, _ROW_PAD, _ROW_FINAL_SIGMA, _ROW_MN_SELF = 0, 1, 2, 3, 4, 5
_CAPITAL_SIGMA = 0x3A3
_CATEGORIES = (
    "Cc Cf Cn Co Cs Ll Lm Lo Lt Lu Mc Me Mn Nd Nl No Pc Pd Pe Pf Pi Po Ps Sc Sk Sm So Zl Zp Zs"
)
_CATEGORIES = tuple(_CATEGORIES.split())  # unicodedata's general categories
_TABLE_CACHE: dict[tuple[bool, bool], dict[str, np.ndarray]] = {}


def _char_expansion(char: str, do_lower_case: bool, strip_accents: bool) -> str:
    """What BasicTokenizer turns one character into, with spaces at the split points.

    Combining marks (Mn) are kept here even when stripping accents: they are dropped in the graph
    after the canonical reordering of NFD, as `_run_strip_accents` does.
    """
    cp = ord(char)
    if cp == 0 or cp == 0xFFFD or _is_control(char):
        return ""
    if _is_whitespace(char) or char.isspace():  # U+2028/2029: str.split() splits there too
        return " "
    text = char
    if do_lower_case:
        text = text.lower()
        if strip_accents:
            text = unicodedata.normalize("NFD", text)
    out = []
    for c in text:
        if _is_punctuation(c):
            out.append(f" {c} ")
        elif c.isspace():
            out.append(" ")
        else:
            out.append(c)
    out = "".join(out)
    return f" {out} " if _is_chinese_char(cp) else out


def _sigma_class(char: str) -> int:
    """0: neither, 1: cased and not case-ignorable, 2: case-ignorable (for Python's Final_Sigma)."""
    if ("" + char + "\u03a3").lower()[-1] == "\u03c2":
        return 1
    if ("A" + char + "\u03a3").lower()[-1] == "\u03c2":
        return 2
    return 0


def _build_tables(do_lower_case: bool, strip_accents: bool) -> dict[str, np.ndarray]:
    """Per-code-point tables with the reference semantics (~0.3 s; cached, see `_load_tables`).

    `row_index[cp]` selects a row of two expansion tables: `kept_*` (combining marks kept, used
    when NFD's canonical reordering is needed) and `fast_*` (marks already dropped). `flags[cp]`:
    bits 0-1 the final-sigma class (dropped characters are skipped, i.e. case-ignorable), bit 2
    "its NFD has a surviving mark with a non-zero combining class" (reordering can matter).

    This is `_char_expansion` and `_sigma_class` for every code point, computed with C-level
    `map`s and numpy per block of code points: only the few thousand characters that lower-casing,
    NFD, punctuation or whitespace change go through `_char_expansion` one by one.
    """
    nfd = do_lower_case and strip_accents
    rows: list[tuple[int, ...]] = [(_IDENTITY,), (), (32,), (32, _IDENTITY, 32), (0x3C2,), ()]
    rows[_ROW_MN_SELF] = (_IDENTITY,)  # a combining mark itself: kept, or dropped on the fast path
    row_ids: dict[tuple[int, ...], int] = {}
    row_index = np.full(_NUM_CODEPOINTS, _ROW_DROP, np.int32)
    flags = np.full(_NUM_CODEPOINTS, 2, np.int8)
    props = np.zeros(_NUM_CODEPOINTS, np.int16)  # combining class | (is Mn) << 8
    category_codes = {c: i for i, c in enumerate(_CATEGORIES)}
    unassigned = category_codes["Cn"]
    is_other, is_mn, is_special = (
        np.array([c[0] == "C" for c in _CATEGORIES]),
        np.array([c == "Mn" for c in _CATEGORIES]),
        np.array([c[0] == "P" or c == "Zs" for c in _CATEGORIES]),
    )
    ascii_special = np.zeros(128, bool)  # ASCII punctuation (some are symbols) and whitespace
    ascii_special[[cp for cp in range(128) if _is_punctuation(chr(cp)) or chr(cp).isspace()]] = 1
    sigma_suffix = itertools.repeat("\u03a3")
    block = 0x10000
    for base in range(0, _NUM_CODEPOINTS, block):
        cps = np.arange(base, base + block)
        all_chars = list(map(chr, range(base, base + block)))
        codes = np.fromiter(
            map(category_codes.__getitem__, map(unicodedata.category, all_chars)), np.int8, block
        )
        mn = is_mn[codes]
        combining = np.zeros(block, np.int16)
        if nfd:  # (unassigned code points have combining class 0)
            assigned = np.flatnonzero(codes != unassigned).tolist()
            values = map(unicodedata.combining, map(all_chars.__getitem__, assigned))
            combining[assigned] = np.fromiter(values, np.int16, len(assigned))
            props[base : base + block] = combining | (mn.astype(np.int16) << 8)
        # C* characters are dropped (row and flags as initialised) but tab, newline and carriage
        # return (Cc), which become spaces.
        todo = np.flatnonzero(~is_other[codes] | np.isin(cps, (9, 10, 13)))
        todo_cps = cps[todo]
        chars = list(map(all_chars.__getitem__, todo.tolist()))
        n = len(chars)
        text = list(map(str.lower, chars)) if do_lower_case else chars
        if nfd:
            text = list(map(functools.partial(unicodedata.normalize, "NFD"), text))
        # The character itself (padded if CJK): unchanged by lower-casing/NFD, not punctuation,
        # not whitespace, not U+FFFD. The others go through `_char_expansion`.
        plain = np.fromiter(map(str.__eq__, text, chars), bool, n)
        plain &= ~is_special[codes[todo]] & ~np.fromiter(map(str.isspace, chars), bool, n)
        plain &= todo_cps != 0xFFFD
        small = todo_cps < 128
        plain[small] &= ~ascii_special[todo_cps[small]]
        cjk = np.fromiter(map(_is_chinese_char, todo_cps.tolist()), bool, n)
        todo_mn = mn[todo]
        rows_here = np.where(cjk, _ROW_PAD, np.where(todo_mn & nfd, _ROW_MN_SELF, _ROW_KEEP))
        marks = (combining[todo] != 0) & ~todo_mn if nfd else np.zeros(n, bool)
        for k in np.flatnonzero(~plain).tolist():
            char = chars[k]
            out = _char_expansion(char, do_lower_case, strip_accents)
            if out == char:
                row = _ROW_MN_SELF if nfd and todo_mn[k] else _ROW_KEEP
            elif out == "":
                row = _ROW_DROP
            elif out == " ":
                row = _ROW_SPACE
            elif out == f" {char} ":
                row = _ROW_PAD
            else:
                values = tuple(ord(c) for c in out)
                row = row_ids.get(values)
                if row is None:
                    row = row_ids[values] = len(rows)
                    rows.append(values)
            rows_here[k] = row
            marks[k] = nfd and any(
                unicodedata.combining(c) and unicodedata.category(c) != "Mn" for c in out
            )
        row_index[todo_cps] = rows_here
        sigma = np.zeros(n, np.int8)
        if do_lower_case:  # `_sigma_class`: 1 if cased, else 2 if case-ignorable
            last = operator.itemgetter(-1)
            with_sigma = list(map(str.__add__, chars, sigma_suffix))
            cased = map("\u03c2".__eq__, map(last, map(str.lower, with_sigma)))
            ignorable = map(
                "\u03c2".__eq__, map(last, map(str.lower, map("A".__add__, with_sigma)))
            )
            sigma = np.where(
                np.fromiter(cased, bool, n), 1, np.where(np.fromiter(ignorable, bool, n), 2, 0)
            )
            sigma[rows_here == _ROW_SPACE] = 0
        flags[todo_cps] = sigma | np.where(marks, 4, 0)
    if do_lower_case:
        # Non-final capital sigma; the final form is chosen in the graph.
        assert _char_expansion("\u03a3", True, strip_accents) == "\u03c3"

    def ragged(table: list[tuple[int, ...]]) -> tuple[np.ndarray, np.ndarray]:
        lengths = np.array([len(r) for r in table], np.int64)
        values = np.array([v for r in table for v in r], np.int32)
        return values, np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)

    fast = list(rows)
    if nfd:
        fast = [
            tuple(v for v in r if v == _IDENTITY or unicodedata.category(chr(v)) != "Mn")
            for r in rows
        ]
        fast[_ROW_MN_SELF] = ()
    tables = {"row_index": row_index, "flags": flags, "props": props}
    tables["kept_values"], tables["kept_splits"] = ragged(rows)
    tables["fast_values"], tables["fast_splits"] = ragged(fast)
    return tables


# ---------------------------------------------------------------------------------------------
# Start-up cost. A new process (each dataset-building worker) would spend seconds computing the
# character tables (a pass over all 1.1M code points in Python) and building the WordPiece models
# (FastWordpieceTokenizer's builder, then its `tf.constant(list(buffer))`); both are cached in
# files (`cache_dir()`), keyed by everything they depend on, and loaded in milliseconds.
# ---------------------------------------------------------------------------------------------

CACHE_DIR_ENV = "ELECTRA_TF_CACHE_DIR"
_TABLE_KEYS = ("row_index", "flags", "props")
_TABLE_KEYS += ("kept_values", "kept_splits", "fast_values", "fast_splits")
with open(__file__, "rb") as _f:
    _SOURCE_DIGEST = hashlib.sha256(_f.read()).hexdigest()  # of the code that runs
_MODEL_CACHE: dict[tuple, tf.Tensor] = {}


def cache_dir() -> str | None:
    """Where the tokenizer's tables and models are cached: $ELECTRA_TF_CACHE_DIR (set but empty:
    no disk cache), else $XDG_CACHE_HOME/electra_tf, else ~/.cache/electra_tf."""
    path = os.environ.get(CACHE_DIR_ENV)
    if path is not None:
        return path or None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "electra_tf")


def _cache_file(kind: str, *key: object) -> str | None:
    """A cache file name for `key` plus what every cached object depends on: this module's source
    (any edit rebuilds), Python's Unicode database (`str.lower`/`unicodedata`) and versions."""
    directory = cache_dir()
    if directory is None:
        return None
    full_key = (key, _SOURCE_DIGEST, sys.version_info[:2], unicodedata.unidata_version)
    full_key += (np.__version__, tf_text.__version__)
    digest = hashlib.sha256(repr(full_key).encode()).hexdigest()[:24]
    return os.path.join(directory, f"{kind}-{digest}")


def _write_atomically(path: str, write) -> None:
    """`write(file)` to a temporary file, then renamed to `path` (readers never see a partial
    file); errors are ignored: the cache is only an optimisation."""
    tmp = None
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with tempfile.NamedTemporaryFile(
            dir=os.path.dirname(path), suffix=".tmp", delete=False
        ) as f:
            tmp = f.name
            write(f)
        os.replace(tmp, path)
    except OSError:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)


def _load_tables(do_lower_case: bool, strip_accents: bool) -> dict[str, np.ndarray]:
    """`_build_tables`, cached in this process and in a file (an .npz: zip checks its CRCs)."""
    key = (bool(do_lower_case), bool(strip_accents))
    if key in _TABLE_CACHE:
        return _TABLE_CACHE[key]
    path = _cache_file("tokenization_tables", *key)
    tables = None
    if path is not None and os.path.isfile(path + ".npz"):
        try:
            with np.load(path + ".npz", allow_pickle=False) as data:
                tables = {name: data[name] for name in _TABLE_KEYS}
            if tables["row_index"].shape != (_NUM_CODEPOINTS,):
                tables = None
        except Exception:  # noqa: BLE001 (unreadable: rebuild it)
            tables = None
    if tables is None:
        tables = _build_tables(*key)
        if path is not None:
            _write_atomically(path + ".npz", lambda f: np.savez(f, **tables))
    _TABLE_CACHE[key] = tables
    return tables


def preload_normalization_tables(do_lower_case: bool, strip_accents: bool) -> None:
    """Builds (or reads from the cache) the character tables now, with numpy only: a parent
    process calls it before forking workers so that they inherit the tables."""
    _load_tables(do_lower_case, strip_accents)


def _fast_wordpiece(
    vocab: dict[str, int], unk_token: str, max_bytes_per_word: int, no_pretokenization: bool
) -> tf_text.FastWordpieceTokenizer:
    """FastWordpieceTokenizer (int32 ids) on `_wordpiece_vocab_list(vocab)`, its model cached in
    this process and in a file (its sha256 appended and checked)."""
    tokens = "\n".join(vocab).encode()  # (tokens never hold a newline)
    vocab_digest = hashlib.sha256(tokens + np.fromiter(vocab.values(), np.int64).tobytes())
    key = (vocab_digest.hexdigest(), unk_token, max_bytes_per_word, no_pretokenization)
    model = _MODEL_CACHE.get(key)
    path = _cache_file("wordpiece_model", *key)
    if model is None and path is not None and os.path.isfile(path + ".bin"):
        with open(path + ".bin", "rb") as f:
            data = f.read()
        if len(data) > 32 and hashlib.sha256(data[:-32]).digest() == data[-32:]:
            model = tf.constant(np.frombuffer(data[:-32], np.uint8))
    if model is None:
        buffer = pywrap_fast_wordpiece_tokenizer_model_builder.build_fast_wordpiece_model(
            _wordpiece_vocab_list(vocab), max_bytes_per_word, "##", unk_token,
            no_pretokenization, False,
        )  # fmt: skip
        model = tf.constant(np.frombuffer(buffer, np.uint8))  # (not `list(buffer)`: slow)
        if path is not None:
            _write_atomically(
                path + ".bin", lambda f: f.write(buffer + hashlib.sha256(buffer).digest())
            )
    _MODEL_CACHE[key] = model
    return tf_text.FastWordpieceTokenizer(model_buffer=model, token_out_type=tf.int32)


def _wordpiece_vocab_list(vocab: dict[str, int]) -> list[str]:
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


class GraphTokenizer(tf.Module):
    """BERT tokenization (the reference's exact ids) as TensorFlow ops, for tf.function/SavedModel.

    Args:
        vocab_file: WordPiece vocab, one token per line (id = line index); tracked as an asset.
        do_lower_case: lower-case (and, with `strip_accents`, strip accents) like BERT uncased.
        strip_accents: drop combining marks after NFD (only when lower-casing, as the original).
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
        unk_token: str = "[UNK]",
        name: str | None = None,
        vocab: dict[str, int] | None = None,
    ):
        super().__init__(name=name)
        vocab = vocab or _load_vocab_checked(vocab_file)
        if unk_token not in vocab:
            raise UserError(f"vocab file {vocab_file} has no {unk_token} token")
        self.do_lower_case = bool(do_lower_case)
        self.strip_accents = bool(strip_accents)
        self.unk_token = unk_token
        self.vocab_file = tf.saved_model.Asset(vocab_file)
        for key, value in _load_tables(self.do_lower_case, self.strip_accents).items():
            setattr(self, f"_{key}", tf.Variable(value, trainable=False, name=key))
        self._wordpiece = _fast_wordpiece(vocab, unk_token, 4 * MAX_CHARS_PER_WORD, True)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def basic_tokenize(self, strings: tf.Tensor) -> tf.RaggedTensor:
        """[batch] UTF-8 strings -> words after BasicTokenizer, RaggedTensor[string] [batch, (words)]."""
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
                tf.reduce_any(tf.equal(flat_cps, _CAPITAL_SIGMA)),
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
        values = tf.where(values == _IDENTITY, tf.gather(flat_cps, owner), values)
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
        sigma = tf.where(tf.equal(cps, _CAPITAL_SIGMA))[:, 0]
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
        updates = tf.fill(tf.shape(sigma), tf.constant(_ROW_FINAL_SIGMA, rows.dtype))
        return tf.tensor_scatter_nd_update(
            rows, tf.boolean_mask(sigma, final)[:, None], tf.boolean_mask(updates, final)
        )


def _load_vocab_checked(vocab_file: str) -> dict[str, int]:
    if not vocab_file or not os.path.isfile(vocab_file):
        raise UserError(f"vocab file not found: {vocab_file!r}")
    vocab = load_vocab(vocab_file)
    if not vocab:
        raise UserError(f"vocab file is empty: {vocab_file}")
    return vocab


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
        disk cache, see `_load_tables`), run eagerly.
    """

    batch_size = 8192

    def __init__(self, vocab_file: str, do_lower_case: bool = True, strip_accents: bool = True):
        self.vocab = _load_vocab_checked(vocab_file)
        if "[UNK]" not in self.vocab:
            raise UserError(f"vocab file {vocab_file} has no [UNK] token")
        self.inv_vocab = {v: k for k, v in self.vocab.items()}
        self.vocab_file = vocab_file
        self.do_lower_case = do_lower_case
        self.strip_accents = strip_accents
        self.basic_tokenizer = BasicTokenizer(do_lower_case, strip_accents)
        self._graph_tokenizer: GraphTokenizer | None = None  # built when first needed
        self._ascii_wordpiece: tf_text.FastWordpieceTokenizer | None = None
        self._reference = None

    @property
    def graph_tokenizer(self) -> GraphTokenizer:
        if self._graph_tokenizer is None:
            self._graph_tokenizer = GraphTokenizer(
                self.vocab_file, self.do_lower_case, self.strip_accents, vocab=self.vocab
            )
        return self._graph_tokenizer

    def make_graph_tokenizer(self) -> GraphTokenizer:
        """The in-graph tokenizer (a tf.Module) for tf.function / SavedModel signatures."""
        return self.graph_tokenizer

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
                self._reference = ReferenceTokenizer.__new__(ReferenceTokenizer)
                self._reference.vocab, self._reference.inv_vocab = self.vocab, self.inv_vocab
                self._reference.basic_tokenizer = self.basic_tokenizer
                self._reference.wordpiece_tokenizer = WordpieceTokenizer(self.vocab)
            for i in fallback:
                result[i] = self._reference.tokenize_to_ids([texts[i]])[0]
        return result

    def _tokenize_ascii(self, strings: tf.Tensor) -> tf.RaggedTensor:
        """[batch] ASCII strings -> ids (see the class docstring)."""
        if self._ascii_wordpiece is None:
            self._ascii_wordpiece = _fast_wordpiece(self.vocab, "[UNK]", MAX_CHARS_PER_WORD, False)
        strings = tf.strings.regex_replace(strings, _ASCII_DROPPED_RE, "")
        if self.do_lower_case:
            strings = tf.strings.lower(strings)  # ASCII only (no encoding given)
        return self._ascii_wordpiece.tokenize(strings)

    def _tokenize_unicode(self, strings: tf.Tensor) -> tf.RaggedTensor:
        return self.graph_tokenizer._tokenize(strings)


def _define_flags() -> None:
    flags.DEFINE_string("vocab_file", None, "WordPiece vocab file (one token per line).")
    flags.DEFINE_string("input", None, "Text file to tokenize, one text per line.")
    flags.DEFINE_string("output", None, "Output file: one line of space-separated ids per line.")
    flags.DEFINE_bool("do_lower_case", True, "Lower-case the text (BERT uncased).")
    flags.DEFINE_bool("strip_accents", True, "Strip accents (only when lower-casing).")


def main(argv: list[str]) -> None:
    if len(argv) > 1:
        raise UserError(f"unexpected arguments: {' '.join(argv[1:])}")
    flag_values = flags.FLAGS
    for name in ("vocab_file", "input", "output"):
        if not flag_values[name].value:
            raise UserError(f"--{name} is required")
    if not os.path.isfile(flag_values.input):
        raise UserError(f"input file not found: {flag_values.input}")
    tokenizer = FullTokenizer(
        flag_values.vocab_file, flag_values.do_lower_case, flag_values.strip_accents
    )
    with open(flag_values.input, encoding="utf-8", errors="replace") as f:
        lines = [line.rstrip("\n") for line in f]
    ids = tokenizer.tokenize_to_ids(lines)
    with open(flag_values.output, "w", encoding="utf-8") as f:
        f.writelines(" ".join(map(str, row)) + "\n" for row in ids)
    print(f"wrote {sum(map(len, ids))} tokens for {len(ids)} lines to {flag_values.output}")


if __name__ == "__main__":
    _define_flags()
    app.run(lambda argv: run_main(lambda: main(argv)))
