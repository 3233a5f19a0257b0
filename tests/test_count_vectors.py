"""`word_embedding_init: ppmi_svd`: co-occurrence counts against a brute-force count, PPMI-SVD
vectors against numpy's exact decomposition, and a pretraining run whose word table starts from
them."""

import itertools
import os

import numpy as np
import pytest
from harness import TINY_RUN, exact_ppmi_vectors, topic_counts

from electra_tf.pretraining_data import count_vectors


def brute_force_counts(ids, vocab_size, window, ignored):
    counts = np.zeros((vocab_size, vocab_size))
    for row in ids:
        for i, j in itertools.combinations(range(len(row)), 2):
            a, b = row[i], row[j]
            if j - i <= window and a != b and a not in ignored and b not in ignored:
                counts[a, b] += 1
                counts[b, a] += 1
    return counts


def test_pair_counts_match_a_brute_force_count():
    rng = np.random.default_rng(0)
    batches = [rng.integers(0, 12, (5, 9)), rng.integers(0, 12, (3, 9))]
    ignored = (0, 3)
    rows, cols, counts = count_vectors.pair_counts(batches, 12, 3, ignored)
    got = np.zeros((12, 12))
    got[rows, cols] = counts
    expected = brute_force_counts(np.concatenate(batches), 12, 3, ignored)
    np.testing.assert_array_equal(got, expected)
    assert expected.sum() > 100  # the case is not trivial
    # the window spans an ignored id (a [SEP]) but never counts it
    r, c, n = count_vectors.pair_counts([np.array([[5, 0, 7]])], 8, 2, (0,))
    assert sorted(zip(r.tolist(), c.tolist(), n.tolist())) == [(5, 7, 1.0), (7, 5, 1.0)]


def test_ppmi_svd_of_sparse_counts_matches_the_exact_decomposition():
    counts = topic_counts()
    rows, cols = np.nonzero(counts)
    # two words without any count: zero rows, and they do not disturb the others
    vectors = count_vectors.ppmi_svd(rows, cols, counts[rows, cols], len(counts) + 2, dim=5)
    assert vectors.shape == (42, 5)
    np.testing.assert_array_equal(vectors[40:], 0)
    expected = exact_ppmi_vectors(counts, 5)
    # the same subspace and scale: Gram matrices agree (signs of singular vectors are free)
    gram = expected @ expected.T
    np.testing.assert_allclose(vectors[:40] @ vectors[:40].T, gram, atol=2e-3 * np.abs(gram).max())


@pytest.fixture(scope="module")
def topic_tfrecords(tmp_path_factory):
    """Two shards of examples whose ids come from one of four topics each ([CLS] ... [SEP],
    then padding), written with the builder's encoder."""
    import tensorflow as tf

    from electra_tf.pretraining_data.encoding import make_tf_example
    from electra_tf.pretraining_data.example_builder import PretrainingExample

    rng = np.random.default_rng(1)
    out = tmp_path_factory.mktemp("topic_tfrecords")
    rows = []
    for shard in range(2):
        with tf.io.TFRecordWriter(str(out / f"data.tfrecord-{shard}-of-2")) as writer:
            for _ in range(60):
                topic, length = rng.integers(4), rng.integers(6, 15)
                words = list(rng.integers(10 + 10 * topic, 20 + 10 * topic, length - 2))
                ids = [1] + words + [2] + [0] * (16 - length)
                mask = [1] * length + [0] * (16 - length)
                example = PretrainingExample(ids, mask, [0] * 16)
                writer.write(make_tf_example(example).SerializeToString())
                rows.append(ids)
    return str(out / "data.tfrecord-*"), np.array(rows)


def test_ppmi_svd_table_reads_the_tfrecords_and_scales_to_the_initializer(topic_tfrecords):
    files, rows = topic_tfrecords
    table, seen = count_vectors.ppmi_svd_table(files, 16, 60, 4, 2, (0, 1, 2), stddev=0.02)
    # ids 10..49 occur; 0, 1, 2 are ignored (padding, [CLS], [SEP]); 50..59 never occur
    np.testing.assert_array_equal(np.flatnonzero(seen), np.arange(10, 50))
    np.testing.assert_array_equal(table[~seen], 0)
    assert table.dtype == np.float32
    assert table[seen].std() == pytest.approx(0.02, rel=1e-5)
    # the vectors of a brute-force count of the same rows, scaled the same way
    counts = brute_force_counts(rows, 60, 2, (0, 1, 2))[10:50, 10:50]
    expected = exact_ppmi_vectors(counts, 4)
    expected *= 0.02 / expected.std()
    gram = expected @ expected.T
    got = table[10:50].astype(np.float64)
    np.testing.assert_allclose(got @ got.T, gram, atol=1e-3 * np.abs(gram).max())
    # words of one topic are closer to each other than to another topic's
    unit = got / np.linalg.norm(got, axis=1, keepdims=True)
    cos = unit @ unit.T
    same = np.repeat(np.arange(4), 10)[:, None] == np.repeat(np.arange(4), 10)[None, :]
    assert cos[same & ~np.eye(40, dtype=bool)].mean() > 0.8 > 0.2 > cos[~same].mean()


@pytest.mark.slow
def test_pretraining_starts_the_shared_word_table_from_the_counts(tiny_dataset, tmp_path):
    """One step at a vanishing learning rate: the checkpoint's word table (shared by generator
    and discriminator) is the counts' table where the data has the word, random elsewhere."""
    import tensorflow as tf

    from electra_tf import vocab
    from electra_tf.pretraining_config import PretrainingConfig
    from electra_tf.train import Trainer

    hp = {**TINY_RUN, "num_train_steps": 1, "num_warmup_steps": 0, "learning_rate": 1e-12,
          "word_embedding_init": "ppmi_svd", "ppmi_window": 3,
          "model_dir": str(tmp_path / "m")}  # fmt: skip
    config = PretrainingConfig.from_flat("m", tiny_dataset, hp)
    trainer = Trainer(config)
    trainer.train()
    files = os.path.join(tiny_dataset, "pretrain_tfrecords", "*tfrecord*")
    special = vocab.special_token_ids(vocab.load_vocab(config.paths.vocab_file), "vocab.txt")
    expected, seen = count_vectors.ppmi_svd_table(
        files, 32, trainer.vocab_size, 32, 3, sorted(special.values()), 0.02, seed=3
    )
    assert 500 < seen.sum() < trainer.vocab_size
    reader = tf.train.load_checkpoint(str(tmp_path / "m"))
    names = [n for n, _ in tf.train.list_variables(str(tmp_path / "m")) if "word_embeddings" in n]
    assert len(names) == 1, names  # one table, shared
    table = reader.get_tensor(names[0])
    np.testing.assert_allclose(table[seen], expected[seen], atol=1e-6)
    # the words the data lacks keep the initializer's random rows (truncated normal, std 0.02)
    assert 0.01 < table[~seen].std() < 0.03 and np.abs(table[~seen]).max() <= 0.04 + 1e-6


def test_word_embedding_init_errors():
    from electra_tf.errors import UserError
    from electra_tf.pretraining_config import PretrainingConfig

    with pytest.raises(UserError, match="ppmi_window must be positive, got 0"):
        PretrainingConfig.from_flat(
            "m", "/d", {"word_embedding_init": "ppmi_svd", "ppmi_window": 0}
        )
    with pytest.raises(UserError, match="init_checkpoint are both set"):
        PretrainingConfig.from_flat(
            "m", "/d", {"word_embedding_init": "ppmi_svd", "init_checkpoint": "/ckpt"}
        )
    with pytest.raises(UserError, match="word_embedding_init"):
        PretrainingConfig.from_flat("m", "/d", {"word_embedding_init": "word2vec"})
