"""experiments/ppmi_vectors.py: co-occurrence counts and PPMI-SVD vectors, against hand counts and
numpy's exact SVD."""

import numpy as np
from harness import exact_ppmi_vectors, topic_counts

from experiments import ppmi_vectors


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
    counts = topic_counts()
    vectors = ppmi_vectors.ppmi_svd(counts, dim=5)
    expected = exact_ppmi_vectors(counts, 5)
    # the same subspace and scale: Gram matrices agree (signs of singular vectors are free)
    gram = expected @ expected.T
    np.testing.assert_allclose(vectors @ vectors.T, gram, atol=2e-3 * np.abs(gram).max())
