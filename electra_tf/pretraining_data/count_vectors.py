"""Word vectors from the pretraining data's co-occurrence counts: positive pointwise mutual
information (PPMI) of token pairs within a window, reduced by a truncated SVD (Levy, Goldberg &
Dagan 2015's recipe: context counts smoothed to the power 0.75, vectors U sqrt(S)).

They start the word-embedding table when a run sets `word_embedding_init: ppmi_svd` (new; the
original starts it at random). At a small budget the network sees each word too few times to learn
the word statistics a count pass extracts from the same text in a minute; the rest of the network
and every other table still start at random, and pretraining then trains all of them as usual.

Counts are sparse (pairs of token ids, never a vocab x vocab array), so the memory is that of
the distinct pairs, whatever the vocab size.
"""

from typing import Callable, Iterable, Optional, Sequence, Tuple

import numpy as np
import tensorflow as tf

from electra_tf.pretraining_data.input_pipeline import expand_file_patterns, parse_records


def pair_counts(
    id_rows: Iterable[np.ndarray], vocab_size: int, window: int, ignored_ids: Sequence[int]
) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Symmetric co-occurrence counts of token ids at distance 1..window within each row.

    Args:
        id_rows: int arrays [rows, length] (e.g. batches of `input_ids`).
        ignored_ids: ids that neither count nor are counted (padding, [CLS], [SEP], [MASK]); the
            window still spans them, as it spans the sentence boundary inside an example.
    Returns:
        (row ids, column ids, counts) of the non-zero entries, a word never paired with itself.
    """
    ignored = np.zeros(vocab_size, bool)
    ignored[list(ignored_ids)] = True
    keys, weights = [], []
    for ids in id_rows:
        ids = np.asarray(ids, np.int64)
        batch = []
        for k in range(1, window + 1):
            a, b = ids[:, :-k].ravel(), ids[:, k:].ravel()
            keep = ~ignored[a] & ~ignored[b] & (a != b)
            a, b = a[keep], b[keep]
            batch += [a * vocab_size + b, b * vocab_size + a]
        if batch:
            unique, count = np.unique(np.concatenate(batch), return_counts=True)
            keys.append(unique)
            weights.append(count)
    if not keys:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0)
    unique, inverse = np.unique(np.concatenate(keys), return_inverse=True)
    counts = np.bincount(inverse, weights=np.concatenate(weights).astype(np.float64))
    return unique // vocab_size, unique % vocab_size, counts


def ppmi_svd(
    rows: np.ndarray, cols: np.ndarray, counts: np.ndarray, vocab_size: int, dim: int,
    seed: int = 0, power_iterations: int = 3,
) -> np.ndarray:  # fmt: skip
    """[vocab_size, dim] rows of U sqrt(S) of the PPMI matrix of the sparse counts, by a
    randomized SVD (Halko et al. 2011: a Gaussian sketch of dim + 16 columns, power iterations).
    A word without counts gets a zero row."""
    total = counts.sum()
    row_sums = np.bincount(rows, weights=counts, minlength=vocab_size)
    col_sums = np.bincount(cols, weights=counts, minlength=vocab_size) ** 0.75
    col_sums = col_sums / col_sums.sum() * total
    pmi = np.log(counts * total / (row_sums[rows] * col_sums[cols]))
    keep = pmi > 0
    matrix = tf.sparse.reorder(
        tf.sparse.SparseTensor(
            np.stack([rows[keep], cols[keep]], 1), pmi[keep].astype(np.float32),
            (vocab_size, vocab_size),
        )
    )  # fmt: skip

    def times(x, transpose=False):
        return tf.sparse.sparse_dense_matmul(matrix, x, adjoint_a=transpose).numpy()

    rng = np.random.default_rng(seed)
    sketch = rng.standard_normal((vocab_size, dim + 16)).astype(np.float32)
    basis = np.linalg.qr(times(sketch))[0]
    for _ in range(power_iterations):
        basis = np.linalg.qr(times(times(basis, transpose=True)))[0]
    u, s, _ = np.linalg.svd(times(basis, transpose=True).T, full_matrices=False)
    vectors = (basis @ u[:, :dim]) * np.sqrt(s[:dim])
    vectors[row_sums == 0] = 0  # exactly: QR leaves round-off in the rows of zeros
    return vectors


def ppmi_svd_table(
    files: str | Sequence[str], max_seq_length: int, vocab_size: int, dim: int, window: int,
    ignored_ids: Sequence[int], stddev: float, seed: int = 0,
    log: Optional[Callable[[str], None]] = None,
) -> Tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """The word-embedding table from the TFRecords' `input_ids`: PPMI-SVD vectors scaled so that
    their entries have standard deviation `stddev` (the initializer's, so that they neither drown
    nor vanish beside the position embeddings they are summed with).

    Returns (table [vocab_size, dim] float32, a bool mask of the words that have counts; the
    others' rows are zero: the caller keeps their random start)."""
    paths = expand_file_patterns(files)
    if not paths:
        raise ValueError(f"no TFRecords match {files}")
    data = tf.data.TFRecordDataset(paths).batch(4096)
    batches = (
        parse_records(records, max_seq_length)["input_ids"].numpy() for records in data
    )  # fmt: skip
    rows, cols, counts = pair_counts(batches, vocab_size, window, ignored_ids)
    seen = np.bincount(rows, minlength=vocab_size) > 0
    if log:
        log(f"co-occurrence counts: {counts.sum():,.0f} pairs (window {window}), "
            f"{len(counts):,} distinct, {seen.sum():,} of {vocab_size:,} words")  # fmt: skip
    if seen.sum() <= dim:
        raise ValueError(f"only {seen.sum()} words occur in {files}: too few for {dim}-d vectors")
    table = ppmi_svd(rows, cols, counts, vocab_size, dim, seed)
    table *= stddev / table[seen].std()
    return table.astype(np.float32), seen
