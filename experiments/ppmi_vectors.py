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
    """Rows of U sqrt(S) of the PPMI matrix (context counts smoothed ^0.75), by a randomized SVD."""
    total = counts.sum()
    rows = counts.sum(1, keepdims=True)
    cols = counts.sum(0, keepdims=True) ** 0.75
    cols = cols / cols.sum() * total
    with np.errstate(divide="ignore", invalid="ignore"):
        pmi = np.log(counts * total / (rows * cols))
    ppmi = np.where(np.isfinite(pmi), np.maximum(pmi, 0), 0).astype(np.float32)
    rng = np.random.default_rng(seed)
    basis = np.linalg.qr(ppmi @ rng.standard_normal((len(ppmi), dim + 16)).astype(np.float32))[0]
    for _ in range(3):  # power iterations
        basis = np.linalg.qr(ppmi @ (ppmi.T @ basis))[0]
    u, s, _ = np.linalg.svd(basis.T @ ppmi, full_matrices=False)
    return (basis @ u[:, :dim]) * np.sqrt(s[:dim])
