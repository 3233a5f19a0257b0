"""Per-code-point tables that give BasicTokenizer's results in the graph, and their cache.

tensorflow-text's own normalisers (NFKC case folding, ICU's Unicode version, its notion of
control characters) do not give BERT's results, so the BasicTokenizer step is done with lookup
tables computed *from Python's own `str.lower`/`unicodedata`* (the reference's semantics, by
construction), applied per code point in the graph (`GraphTokenizer`):
  row[cp] -> the code points that cp becomes (dropped, space, padded punctuation/CJK, lower-cased,
  NFD-decomposed). The only context-dependent parts of the reference are done in the graph:
  Python's final-sigma rule of `str.lower` (U+03A3) and NFD's canonical reordering of combining
  marks (only observable for the few Mc marks with a non-zero combining class).
"""

import functools
import itertools
import operator
import os
import unicodedata

import numpy as np

from electra_tf.tokenization.cache import cache_file, write_cache_file
from electra_tf.tokenization.reference import (
    is_chinese_char,
    is_control,
    is_punctuation,
    is_whitespace,
)

NUM_CODEPOINTS = 0x110000
IDENTITY = -1  # placeholder in an expansion row: "the code point itself"
ROW_KEEP, ROW_DROP, ROW_SPACE, ROW_PAD, ROW_FINAL_SIGMA, ROW_MN_SELF = 0, 1, 2, 3, 4, 5
CAPITAL_SIGMA = 0x3A3
CATEGORIES = (
    "Cc Cf Cn Co Cs Ll Lm Lo Lt Lu Mc Me Mn Nd Nl No Pc Pd Pe Pf Pi Po Ps Sc Sk Sm So Zl Zp Zs"
)
CATEGORIES = tuple(CATEGORIES.split())  # unicodedata's general categories
TABLE_KEYS = ("row_index", "flags", "props")
TABLE_KEYS += ("kept_values", "kept_splits", "fast_values", "fast_splits")
_TABLE_CACHE: dict[tuple[bool, bool], dict[str, np.ndarray]] = {}


def char_expansion(char: str, do_lower_case: bool, strip_accents: bool) -> str:
    """What BasicTokenizer turns one character into, with spaces at the split points.

    Combining marks (Mn) are kept here even when stripping accents: they are dropped in the graph
    after the canonical reordering of NFD, as `_run_strip_accents` does.
    """
    cp = ord(char)
    if cp == 0 or cp == 0xFFFD or is_control(char):
        return ""
    if is_whitespace(char) or char.isspace():  # U+2028/2029: str.split() splits there too
        return " "
    text = char
    if do_lower_case:
        text = text.lower()
        if strip_accents:
            text = unicodedata.normalize("NFD", text)
    out = []
    for c in text:
        if is_punctuation(c):
            out.append(f" {c} ")
        elif c.isspace():
            out.append(" ")
        else:
            out.append(c)
    out = "".join(out)
    return f" {out} " if is_chinese_char(cp) else out


def sigma_class(char: str) -> int:
    """0: neither, 1: cased and not case-ignorable, 2: case-ignorable (for Python's Final_Sigma)."""
    if ("" + char + "\u03a3").lower()[-1] == "\u03c2":
        return 1
    if ("A" + char + "\u03a3").lower()[-1] == "\u03c2":
        return 2
    return 0


def build_tables(do_lower_case: bool, strip_accents: bool) -> dict[str, np.ndarray]:
    """Per-code-point tables with the reference semantics (~0.3 s; cached by `load_tables`).

    `row_index[cp]` selects a row of two expansion tables: `kept_*` (combining marks kept, used
    when NFD's canonical reordering is needed) and `fast_*` (marks already dropped). `flags[cp]`:
    bits 0-1 the final-sigma class (dropped characters are skipped, i.e. case-ignorable), bit 2
    "its NFD has a surviving mark with a non-zero combining class" (reordering can matter).

    This is `char_expansion` and `sigma_class` for every code point, computed with C-level
    `map`s and numpy per block of code points: only the few thousand characters that lower-casing,
    NFD, punctuation or whitespace change go through `char_expansion` one by one.
    """
    nfd = do_lower_case and strip_accents
    rows: list[tuple[int, ...]] = [(IDENTITY,), (), (32,), (32, IDENTITY, 32), (0x3C2,), ()]
    rows[ROW_MN_SELF] = (IDENTITY,)  # a combining mark itself: kept, or dropped on the fast path
    row_ids: dict[tuple[int, ...], int] = {}
    row_index = np.full(NUM_CODEPOINTS, ROW_DROP, np.int32)
    flags = np.full(NUM_CODEPOINTS, 2, np.int8)
    props = np.zeros(NUM_CODEPOINTS, np.int16)  # combining class | (is Mn) << 8
    category_codes = {c: i for i, c in enumerate(CATEGORIES)}
    unassigned = category_codes["Cn"]
    is_other, is_mn, is_special = (
        np.array([c[0] == "C" for c in CATEGORIES]),
        np.array([c == "Mn" for c in CATEGORIES]),
        np.array([c[0] == "P" or c == "Zs" for c in CATEGORIES]),
    )
    ascii_special = np.zeros(128, bool)  # ASCII punctuation (some are symbols) and whitespace
    ascii_special[[cp for cp in range(128) if is_punctuation(chr(cp)) or chr(cp).isspace()]] = 1
    sigma_suffix = itertools.repeat("\u03a3")
    block = 0x10000
    for base in range(0, NUM_CODEPOINTS, block):
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
        # not whitespace, not U+FFFD. The others go through `char_expansion`.
        plain = np.fromiter(map(str.__eq__, text, chars), bool, n)
        plain &= ~is_special[codes[todo]] & ~np.fromiter(map(str.isspace, chars), bool, n)
        plain &= todo_cps != 0xFFFD
        small = todo_cps < 128
        plain[small] &= ~ascii_special[todo_cps[small]]
        cjk = np.fromiter(map(is_chinese_char, todo_cps.tolist()), bool, n)
        todo_mn = mn[todo]
        rows_here = np.where(cjk, ROW_PAD, np.where(todo_mn & nfd, ROW_MN_SELF, ROW_KEEP))
        marks = (combining[todo] != 0) & ~todo_mn if nfd else np.zeros(n, bool)
        for k in np.flatnonzero(~plain).tolist():
            char = chars[k]
            out = char_expansion(char, do_lower_case, strip_accents)
            if out == char:
                row = ROW_MN_SELF if nfd and todo_mn[k] else ROW_KEEP
            elif out == "":
                row = ROW_DROP
            elif out == " ":
                row = ROW_SPACE
            elif out == f" {char} ":
                row = ROW_PAD
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
        if do_lower_case:  # `sigma_class`: 1 if cased, else 2 if case-ignorable
            last = operator.itemgetter(-1)
            with_sigma = list(map(str.__add__, chars, sigma_suffix))
            cased = map("\u03c2".__eq__, map(last, map(str.lower, with_sigma)))
            ignorable = map(
                "\u03c2".__eq__, map(last, map(str.lower, map("A".__add__, with_sigma)))
            )
            sigma = np.where(
                np.fromiter(cased, bool, n), 1, np.where(np.fromiter(ignorable, bool, n), 2, 0)
            )
            sigma[rows_here == ROW_SPACE] = 0
        flags[todo_cps] = sigma | np.where(marks, 4, 0)
    if do_lower_case:
        # Non-final capital sigma; the final form is chosen in the graph.
        assert char_expansion("\u03a3", True, strip_accents) == "\u03c3"

    def ragged(table: list[tuple[int, ...]]) -> tuple[np.ndarray, np.ndarray]:
        lengths = np.array([len(r) for r in table], np.int64)
        values = np.array([v for r in table for v in r], np.int32)
        return values, np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)

    fast = list(rows)
    if nfd:
        fast = [
            tuple(v for v in r if v == IDENTITY or unicodedata.category(chr(v)) != "Mn")
            for r in rows
        ]
        fast[ROW_MN_SELF] = ()
    tables = {"row_index": row_index, "flags": flags, "props": props}
    tables["kept_values"], tables["kept_splits"] = ragged(rows)
    tables["fast_values"], tables["fast_splits"] = ragged(fast)
    return tables


def load_tables(do_lower_case: bool, strip_accents: bool) -> dict[str, np.ndarray]:
    """`build_tables`, cached in this process and in a file (an .npz: zip checks its CRCs)."""
    key = (bool(do_lower_case), bool(strip_accents))
    if key in _TABLE_CACHE:
        return _TABLE_CACHE[key]
    path = cache_file("tokenization_tables", *key)
    tables = None
    if path is not None and os.path.isfile(path + ".npz"):
        try:
            with np.load(path + ".npz", allow_pickle=False) as data:
                tables = {name: data[name] for name in TABLE_KEYS}
            if tables["row_index"].shape != (NUM_CODEPOINTS,):
                tables = None
        except Exception:  # noqa: BLE001 (unreadable: rebuild it)
            tables = None
    if tables is None:
        tables = build_tables(*key)
        if path is not None:
            write_cache_file(path + ".npz", lambda f: np.savez(f, **tables))
    _TABLE_CACHE[key] = tables
    return tables


def preload_normalization_tables(do_lower_case: bool, strip_accents: bool) -> None:
    """Builds (or reads from the cache) the character tables now, with numpy only: a parent
    process calls it before forking workers so that they inherit the tables."""
    load_tables(do_lower_case, strip_accents)
