"""experiments/ppmi_vectors.py: co-occurrence counts and PPMI-SVD vectors, against hand counts and
numpy's exact SVD."""

import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "experiments"))

import ppmi_vectors  # noqa: E402


def test_documents_and_words(tmp_path):
    path = tmp_path / "c.txt"
    path.write_text("It's a GOOD film.\nGood!\n\n\nA bad one\n", encoding="utf-8")
    assert list(ppmi_vectors.documents([str(path)])) == [
        [["it's", "a", "good", "film"], ["good"]],
        [["a", "bad", "one"]],
    ]


def test_cooccurrence_by_window_sentence_and_document():
    index = {"a": 0, "b": 1, "c": 2}
    docs = [[["a", "b", "x", "c"], ["c", "a"]]]  # x is out of the vocab: dropped first
    # window 1 over a b c / c a: pairs (a,b), (b,c), (c,a), both ways
    w1 = ppmi_vectors.cooccurrence(docs, index, "1")
    np.testing.assert_array_equal(w1, [[0, 1, 1], [1, 0, 1], [1, 1, 0]])
    # window 2 adds (a,c) of the first line: a-c twice in all
    w2 = ppmi_vectors.cooccurrence(docs, index, "2")
    np.testing.assert_array_equal(w2, [[0, 1, 2], [1, 0, 1], [2, 1, 0]])
    # sentence: each line's distinct words once; document: the whole document once
    s = ppmi_vectors.cooccurrence(docs, index, "sentence")
    np.testing.assert_array_equal(s, [[0, 1, 2], [1, 0, 1], [2, 1, 0]])
    d = ppmi_vectors.cooccurrence(docs, index, "document")
    np.testing.assert_array_equal(d, [[0, 1, 1], [1, 0, 1], [1, 1, 0]])


def test_ppmi_svd_matches_the_exact_decomposition():
    # words in 5 topics: co-occurrence mostly within a topic, so PPMI has a clear top-5 spectrum
    rng = np.random.default_rng(0)
    topic = np.repeat(np.arange(5), 8)
    rates = np.where(topic[:, None] == topic[None, :], 40.0, 1.0)
    counts = rng.poisson(rates).astype(float)
    counts = counts + counts.T
    np.fill_diagonal(counts, 0)
    # PPMI by hand, context counts smoothed ^0.75
    total = counts.sum()
    p_context = counts.sum(0) ** 0.75 / (counts.sum(0) ** 0.75).sum()
    with np.errstate(divide="ignore"):
        pmi = np.log(counts / total / (counts.sum(1)[:, None] / total) / p_context[None, :])
    ppmi = np.where(np.isfinite(pmi), np.maximum(pmi, 0), 0)
    u, s, _ = np.linalg.svd(ppmi)
    vectors = ppmi_vectors.ppmi_svd(counts, dim=5)
    # the same subspace and scale: Gram matrices agree (signs of singular vectors are free)
    expected = (u[:, :5] * np.sqrt(s[:5])) @ (u[:, :5] * np.sqrt(s[:5])).T
    np.testing.assert_allclose(vectors @ vectors.T, expected, atol=2e-3 * np.abs(expected).max())
