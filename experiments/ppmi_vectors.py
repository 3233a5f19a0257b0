"""Word vectors from a corpus by PPMI and truncated SVD (no network): the arithmetic of
ppmi_probe.py, without its flags."""

import re
from typing import Dict, Iterator, List

import numpy as np

WORD = re.compile(r"[a-z0-9']+")


def words(text: str) -> List[str]:
    return WORD.findall(text.lower())


def documents(paths: List[str]) -> Iterator[List[List[str]]]:
    """Each document as its lines' words."""
    for path in paths:
        doc: List[List[str]] = []
        with open(path, encoding="utf-8") as f:
            for line in f:
                if line.strip():
                    doc.append(words(line))
                elif doc:
                    yield doc
                    doc = []
        if doc:
            yield doc


def cooccurrence(docs: List[List[List[str]]], index: Dict[str, int], context: str) -> np.ndarray:
    n = len(index)
    counts = np.zeros((n, n))
    for doc in docs:
        units = [sum(doc, [])] if context == "document" else doc
        for unit in units:
            ids = np.array([index[w] for w in unit if w in index], dtype=np.int64)
            if context in ("sentence", "document"):
                present = np.unique(ids)
                counts[np.ix_(present, present)] += 1
            else:
                for k in range(1, int(context) + 1):
                    np.add.at(counts, (ids[:-k], ids[k:]), 1)
                    np.add.at(counts, (ids[k:], ids[:-k]), 1)
    np.fill_diagonal(counts, 0)
    return counts


def ppmi_svd(counts: np.ndarray, dim: int, seed: int = 0) -> np.ndarray:
    """Rows of U sqrt(S) of the PPMI matrix of dense counts (context counts smoothed ^0.75): the
    package's randomized SVD (`count_vectors.ppmi_svd`) of their non-zero entries."""
    from electra_tf.pretraining_data import count_vectors

    rows, cols = np.nonzero(counts)
    return count_vectors.ppmi_svd(rows, cols, counts[rows, cols], len(counts), dim, seed)
