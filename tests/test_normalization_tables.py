"""The normalisation tables against their one-character-at-a-time definition, and the disk cache
of the tables and of the WordPiece models."""

import os
import unicodedata

import numpy as np

from electra_tf import tokenization
from electra_tf.tokenization import fast_wordpiece, normalization_tables

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VOCAB = os.path.join(ROOT, "data", "vocab", "vocab.txt")


def test_tables_match_char_expansion():
    # The bulk (numpy/map) table construction against `char_expansion`/`sigma_class` applied to
    # every code point one by one (the definition), for the uncased setting.
    tables = normalization_tables.load_tables(True, True)
    kept_values, kept_splits = tables["kept_values"], tables["kept_splits"]
    fast_values, fast_splits = tables["fast_values"], tables["fast_splits"]
    kept_rows = [tuple(kept_values[a:b]) for a, b in zip(kept_splits[:-1], kept_splits[1:])]
    fast_rows = [tuple(fast_values[a:b]) for a, b in zip(fast_splits[:-1], fast_splits[1:])]
    row_index, flags, props = (tables[k].tolist() for k in ("row_index", "flags", "props"))
    for cp in range(normalization_tables.NUM_CODEPOINTS):
        char = chr(cp)
        category = unicodedata.category(char)
        assert props[cp] == unicodedata.combining(char) | ((category == "Mn") << 8), hex(cp)
        if category[0] == "C" and cp not in (9, 10, 13):
            assert (row_index[cp], flags[cp]) == (normalization_tables.ROW_DROP, 2), hex(cp)
            continue
        out = normalization_tables.char_expansion(char, True, True)
        row = row_index[cp]
        expected = tuple(map(ord, out))
        assert tuple(cp if v == -1 else v for v in kept_rows[row]) == expected, hex(cp)
        expected = tuple(v for v in expected if unicodedata.category(chr(v)) != "Mn")
        assert tuple(cp if v == -1 else v for v in fast_rows[row]) == expected, hex(cp)
        sigma = normalization_tables.sigma_class(char) if out != " " else 0
        mark = any(unicodedata.combining(c) and unicodedata.category(c) != "Mn" for c in out)
        assert flags[cp] == sigma | (4 * mark), hex(cp)


def test_disk_cache(tmp_path, monkeypatch):
    monkeypatch.setenv(tokenization.CACHE_DIR_ENV, str(tmp_path / "cache"))
    monkeypatch.setattr(normalization_tables, "_TABLE_CACHE", {})
    monkeypatch.setattr(fast_wordpiece, "_MODEL_CACHE", {})
    builds = []
    build_tables = normalization_tables.build_tables
    monkeypatch.setattr(
        normalization_tables, "build_tables", lambda *key: builds.append(key) or build_tables(*key)
    )
    built = normalization_tables.load_tables(False, False)
    (table_file,) = (tmp_path / "cache").glob("tokenization_tables-*.npz")
    normalization_tables._TABLE_CACHE.clear()
    loaded = normalization_tables.load_tables(False, False)  # from the file
    assert builds == [(False, False)]
    assert all(np.array_equal(built[k], loaded[k]) for k in built)
    table_file.write_bytes(table_file.read_bytes()[:1000])  # truncated: rebuilt and rewritten
    normalization_tables._TABLE_CACHE.clear()
    rebuilt = normalization_tables.load_tables(False, False)
    assert builds == [(False, False)] * 2
    assert all(np.array_equal(built[k], rebuilt[k]) for k in built)
    assert table_file.stat().st_size > 1000
    tok = tokenization.FullTokenizer(VOCAB, do_lower_case=False)
    assert tok.tokenize_to_ids(["Hello hello", "héllo"]) == [[100, 7592], [100]]
    model_files = sorted((tmp_path / "cache").glob("wordpiece_model-*.bin"))
    assert len(model_files) == 2  # the ASCII path's and the general path's
    for path in model_files:
        path.write_bytes(b"\0" * 64)  # bad checksum: rebuilt
    fast_wordpiece._MODEL_CACHE.clear()
    tok = tokenization.FullTokenizer(VOCAB, do_lower_case=False)
    assert tok.tokenize_to_ids(["Hello hello", "héllo"]) == [[100, 7592], [100]]
    assert all(path.stat().st_size > 64 for path in model_files)
    monkeypatch.setenv(tokenization.CACHE_DIR_ENV, "")  # disabled
    assert tokenization.cache_dir() is None
