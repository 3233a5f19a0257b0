"""The tokenizer's disk cache: files keyed by everything their contents depend on.

A new process (each dataset-building worker) would spend seconds computing the character tables
(a pass over all 1.1M code points in Python) and building the WordPiece models
(FastWordpieceTokenizer's builder); both are cached in files under `cache_dir()` and loaded in
milliseconds. The cache is only an optimisation: a file that cannot be written is skipped, one that
cannot be read is rebuilt.
"""

import hashlib
import os
import sys
import unicodedata
from typing import IO, Callable

import numpy as np
import tensorflow_text as tf_text

from electra_tf.io_utils import CACHE_DIR_ENV, cache_dir, write_atomically  # noqa: F401


def _source_digest() -> str:
    """sha256 of this package's source (the code that computes what is cached): an edit rebuilds."""
    digest = hashlib.sha256()
    directory = os.path.dirname(os.path.abspath(__file__))
    for name in sorted(os.listdir(directory)):
        if name.endswith(".py"):
            with open(os.path.join(directory, name), "rb") as f:
                digest.update(name.encode() + b"\0" + f.read())
    return digest.hexdigest()


_SOURCE_DIGEST = _source_digest()


def cache_file(kind: str, *key: object) -> str | None:
    """A cache file name (without extension) for `key` plus what every cached object depends on:
    this package's source, Python's Unicode database (`str.lower`/`unicodedata`) and versions.
    None when the disk cache is disabled."""
    directory = cache_dir()
    if directory is None:
        return None
    full_key = (key, _SOURCE_DIGEST, sys.version_info[:2], unicodedata.unidata_version)
    full_key += (np.__version__, tf_text.__version__)
    digest = hashlib.sha256(repr(full_key).encode()).hexdigest()[:24]
    return os.path.join(directory, f"{kind}-{digest}")


def write_cache_file(path: str, write: Callable[[IO[bytes]], None]) -> None:
    """`write(binary file)` to `path` atomically (readers never see a partial file); an error is
    ignored: the cache is only an optimisation."""
    try:
        write_atomically(path, write, mode="wb")
    except OSError:
        pass
