"""Dynamic masking, categorical sampling, and the gather/scatter helpers of the original.

Randomness here comes from a counter-based hash: every random number is a pure function of
(run seed, step, the example's content, position). So the masks and samples of a step do not
depend on how the global batch is split over replicas, workers or gradient-accumulation
micro-batches, nor on the order of examples in the batch, and a resumed run replays exactly the
randomness it would have drawn, with no generator state to save. (Two identical sequences in one
batch get identical masks; with real corpora that is rare and harmless.)
"""

from typing import NamedTuple, Optional

import tensorflow as tf


def _u32(value: int) -> tf.Tensor:
    return tf.constant(value & 0xFFFFFFFF, tf.uint32)


def _shr(x: tf.Tensor, bits: int) -> tf.Tensor:
    return tf.bitwise.right_shift(x, _u32(bits))


def _mix32(x: tf.Tensor) -> tf.Tensor:
    """A 32-bit integer finaliser (xorshift-multiply; uint32 arithmetic wraps mod 2^32)."""
    x = tf.bitwise.bitwise_xor(x, _shr(x, 16))
    x = x * _u32(0x7FEB352D)
    x = tf.bitwise.bitwise_xor(x, _shr(x, 15))
    x = x * _u32(0x846CA68B)
    return tf.bitwise.bitwise_xor(x, _shr(x, 16))


def _to_u32(x: tf.Tensor) -> tf.Tensor:
    """The low 32 bits of an integer tensor, as uint32."""
    if x.dtype == tf.uint32:
        return x
    if x.dtype == tf.int64:
        x = tf.cast(tf.bitwise.bitwise_and(x, 0xFFFFFFFF), tf.uint32)
        return x
    return tf.bitcast(tf.cast(x, tf.int32), tf.uint32)


def random_key(seed, step, purpose: int) -> tf.Tensor:
    """A 32-bit key (uint32) for one use (`purpose`) of randomness at one step of one run."""
    step = tf.cast(step, tf.int64)
    x = _mix32(_to_u32(tf.cast(seed, tf.int64)))
    x = _mix32(x + _to_u32(step) * _u32(0x9E3779B9) + _to_u32(tf.bitwise.right_shift(step, 32)))
    return _mix32(x + _u32(purpose * 0x85EBCA6B))


def counter_uniform(key: tf.Tensor, counters: tf.Tensor) -> tf.Tensor:
    """Uniform float32 in [0, 1) (24-bit resolution), one per counter, for a given key.

    `counters` is a pair (example key [B, 1...] uint32, index within the example [...] uint32)
    broadcast together, or a single integer tensor.
    """
    if isinstance(counters, tuple):
        example, index = counters
        h = _mix32(tf.bitwise.bitwise_xor(example, key)) + index
    else:
        h = tf.bitwise.bitwise_xor(_to_u32(counters), key)
    h = _mix32(_mix32(h))
    return tf.cast(_shr(h, 8), tf.float32) * (1.0 / (1 << 24))


def content_keys(input_ids: tf.Tensor, input_mask: tf.Tensor) -> tf.Tensor:
    """A 32-bit key per example [B] (uint32) from its token ids and positions."""
    length = tf.shape(input_ids)[1]
    pos = _mix32(tf.bitcast(tf.range(length, dtype=tf.int32), tf.uint32) + _u32(0x5BD1E995))
    ids = _to_u32(tf.cast(input_ids, tf.int32) * tf.cast(input_mask, tf.int32))
    per_token = _mix32(tf.bitwise.bitwise_xor(ids, pos[tf.newaxis, :]))
    return _mix32(tf.reduce_sum(per_token, axis=1))


def example_counters(example_keys: tf.Tensor, inner_shape):
    """Counters for a [B, *inner_shape] random tensor: (example key, flat index) pairs."""
    inner = 1
    for d in inner_shape:
        inner *= d
    index = tf.reshape(tf.bitcast(tf.range(inner, dtype=tf.int32), tf.uint32), inner_shape)
    example = tf.reshape(_to_u32(example_keys), [-1] + [1] * len(inner_shape))
    return example, index[tf.newaxis]


class MaskedInputs(NamedTuple):
    input_ids: tf.Tensor  # [B, L] with [MASK] substituted (85% of chosen positions)
    masked_lm_positions: tf.Tensor  # [B, N] int32; unused slots point at 0 ([CLS])
    masked_lm_ids: tf.Tensor  # [B, N] the original tokens at those positions (0 in unused slots)
    masked_lm_weights: tf.Tensor  # [B, N] float32, 1 for the first num_to_predict slots


def gather_positions(sequence: tf.Tensor, positions: tf.Tensor) -> tf.Tensor:
    """sequence [B, L] or [B, L, D] gathered at positions [B, N] -> [B, N] or [B, N, D]."""
    return tf.gather(sequence, positions, batch_dims=1)


@tf.custom_gradient
def pick_logits(logits: tf.Tensor, ids: tf.Tensor):
    """logits [..., V] at ids [...] -> [...]: `tf.gather(logits, ids, batch_dims=ids.rank)`.

    Its gradient is the same values as the gather's (the upstream gradient at each id, zeros
    elsewhere) written as a dense one-hot product: the gather's own gradient scatters into a
    flattened [..., V] tensor through UnsortedSegmentSum, one thread, ~6% of an ELECTRA-Small
    step on a CPU; the logits' gradient is a dense [..., V] tensor either way.
    """
    picked = tf.gather(logits, ids, batch_dims=len(ids.shape))

    def grad(upstream):
        one_hot = tf.one_hot(ids, tf.shape(logits)[-1], dtype=logits.dtype)
        return upstream[..., tf.newaxis] * one_hot, None

    return picked, grad


def scatter_update(sequence: tf.Tensor, updates: tf.Tensor, positions: tf.Tensor):
    """Writes updates [B, N] into sequence [B, L] at positions [B, N], as the original.

    Updates aimed at position 0 are ignored (that is how unused slots and kept tokens become
    no-ops). Several updates to one position are averaged (integer floor division for ids), a rare
    quirk of the original kept for faithfulness. Returns (updated sequence, updated-position mask).
    """
    length = tf.shape(sequence)[1]
    onehot = tf.one_hot(positions, length, dtype=tf.int32)  # [B, N, L]
    onehot *= tf.cast(positions != 0, tf.int32)[:, :, tf.newaxis]
    counts = tf.reduce_sum(onehot, axis=1)  # [B, L]
    sums = tf.reduce_sum(onehot * tf.cast(updates, tf.int32)[:, :, tf.newaxis], axis=1)
    updated = tf.where(counts > 0, sums // tf.maximum(counts, 1), tf.cast(sequence, tf.int32))
    return tf.cast(updated, sequence.dtype), tf.cast(counts > 0, tf.int32)


def num_to_predict(input_mask: tf.Tensor, mask_prob: float, max_predictions: int) -> tf.Tensor:
    """max(1, min(N, round_half_even(float32(len) * p))) per example, as the original."""
    num_tokens = tf.cast(tf.reduce_sum(input_mask, axis=-1), tf.float32)
    n = tf.cast(tf.round(num_tokens * mask_prob), tf.int32)
    return tf.maximum(1, tf.minimum(max_predictions, n))


def candidates_mask(input_ids, input_mask, special_ids) -> tf.Tensor:
    """True where a token may be masked: a real token that is not [CLS], [SEP] or [MASK]."""
    ok = tf.cast(input_mask, tf.bool)
    for token_id in special_ids:
        ok &= input_ids != token_id
    return ok


def mask_inputs(
    input_ids: tf.Tensor,
    input_mask: tf.Tensor,
    *,
    mask_prob: float,
    max_predictions: int,
    mask_id: int,
    special_ids,
    key: tf.Tensor,
    example_ids: tf.Tensor,
    mask_token_fraction: float = 0.85,
    random_token_fraction: float = 0.0,
    vocab_size: Optional[int] = None,
    word_continuation: Optional[tf.Tensor] = None,
    word_starts: Optional[tf.Tensor] = None,
) -> MaskedInputs:
    """ELECTRA's dynamic masking.

    Positions are N independent uniform draws (with replacement) over the candidates; the first
    num_to_predict slots are used. Of the chosen positions, `mask_token_fraction` (0.85) become
    [MASK] and the rest keep their token; the original replaces none with a random token
    (`random_token_fraction` > 0 gives BERT's 80/10/10 with 0.8 / 0.1).

    With `word_continuation` (bool [V], True for `##` pieces) the positions are whole words
    instead (`whole_word_positions`); the [MASK] / kept / random choice is still per token. With
    `word_starts` ([B, L], 1 where a word of a segmenter starts, the TFRecords' `word_starts`)
    the words are those instead of the `##` table's.
    """
    n = max_predictions
    candidates = candidates_mask(input_ids, input_mask, special_ids)
    u = counter_uniform(key, example_counters(example_ids, [3, n]))  # [B, 3, N]
    num = num_to_predict(input_mask, mask_prob, n)
    if word_continuation is not None or word_starts is not None:
        if word_starts is not None:  # a token that starts no word continues one
            continues = 1 - tf.minimum(tf.cast(word_starts, tf.int32), 1)
        else:
            continues = tf.gather(tf.cast(word_continuation, tf.int32), input_ids)
        positions, weights_int = whole_word_positions(
            input_ids, candidates, continues, num, n, key, example_ids
        )
    else:
        rank = tf.cumsum(tf.cast(candidates, tf.int32), axis=1)  # [B, L]
        num_candidates = rank[:, -1:]  # [B, 1]
        k = tf.cast(tf.floor(u[:, 0] * tf.cast(num_candidates, tf.float32)), tf.int32)
        k = tf.minimum(k, tf.maximum(num_candidates - 1, 0))  # [B, N]: which candidate
        positions = nth_true_index(rank, k)
        weights_int = tf.sequence_mask(num, n, dtype=tf.int32)
        weights_int *= tf.cast(num_candidates > 0, tf.int32)
    positions = positions * weights_int
    masked_lm_ids = gather_positions(input_ids, positions) * weights_int
    use_mask = u[:, 1] < mask_token_fraction
    replacement = tf.fill(tf.shape(positions), tf.cast(mask_id, input_ids.dtype))
    if random_token_fraction > 0:
        use_random = (u[:, 1] >= mask_token_fraction) & (
            u[:, 1] < mask_token_fraction + random_token_fraction
        )
        random_ids = tf.cast(tf.floor(u[:, 2] * vocab_size), input_ids.dtype)
        replacement = tf.where(use_random, random_ids, replacement)
        use_mask = use_mask | use_random
    replace_positions = positions * tf.cast(use_mask, tf.int32)
    masked_ids, _ = scatter_update(input_ids, replacement, replace_positions)
    return MaskedInputs(
        input_ids=tf.stop_gradient(masked_ids),
        masked_lm_positions=positions,
        masked_lm_ids=masked_lm_ids,
        masked_lm_weights=tf.cast(weights_int, tf.float32),
    )


def nth_true_index(rank: tf.Tensor, k: tf.Tensor) -> tf.Tensor:
    """[B, N]: the index of the (k+1)-th True of a row, from rank = cumsum(row) [B, L]: the
    number of indices j with rank[j] <= k."""
    return tf.reduce_sum(tf.cast(rank[:, tf.newaxis, :] <= k[:, :, tf.newaxis], tf.int32), -1)


def whole_word_positions(input_ids, candidates, continues, num, n, key, example_ids):
    """Whole-word masking: ([B, N] positions, [B, N] int weights).

    A word is a candidate token and the continuation candidates right after it (`continues`
    [B, L] int, 1 where a token continues the word before it: a `##` piece, or a token inside a
    segmenter's word; a continuation after a non-candidate starts a word of its own). The words
    are taken in a random order (a uniform key per word, keyed by the example's content and the
    word's first position, so a pure function of (seed, step, example content, position) as all
    masking), each one whole
    and only if it still fits: the masked tokens never exceed the original's count num_to_predict
    (over tokens, [CLS] and [SEP] counted), and a word that does not fit is skipped for the later
    ones that may (BERT's whole-word rule). Every token of a taken word gets a slot, in position
    order; no position is chosen twice (the original draws with replacement).
    """
    batch, length = tf.shape(input_ids)[0], tf.shape(input_ids)[1]
    cand = tf.cast(candidates, tf.int32)
    cont = tf.cast(continues, tf.int32) * cand
    previous = tf.pad(cand[:, :-1], [[0, 0], [1, 0]])
    start = cand * (1 - cont * previous)  # [B, L]: a word begins here
    word = tf.cumsum(start, axis=1) * cand  # 1-based word index per token, 0 off candidates
    # per word k in 0..L (0: no word): its length and its key
    segments = word + tf.range(batch)[:, tf.newaxis] * (length + 1)
    size = batch * (length + 1)
    lengths = tf.reshape(tf.math.unsorted_segment_sum(cand, segments, size), [batch, -1])
    index = tf.bitcast(tf.range(length, dtype=tf.int32) + 3 * n, tf.uint32)  # after u's
    u = counter_uniform(key, (tf.reshape(_to_u32(example_ids), [-1, 1]), index[tf.newaxis]))
    keys = tf.math.unsorted_segment_sum(u * tf.cast(start, tf.float32), segments, size)
    keys = tf.where(lengths > 0, tf.reshape(keys, [batch, -1]), 2.0)
    keys = tf.concat([tf.fill([batch, 1], 3.0), keys[:, 1:]], axis=1)  # word 0 last
    order = tf.argsort(keys, axis=1, stable=True)  # words in a random order, then the rest
    sorted_lengths = tf.gather(lengths * tf.cast(keys < 2.0, tf.int32), order, batch_dims=1)

    def take(used, word_length):  # greedy: a word is taken when it still fits
        fits = (word_length > 0) & (used + word_length <= num)
        return used + tf.where(fits, word_length, 0)

    used = tf.scan(take, tf.transpose(sorted_lengths), initializer=tf.zeros_like(num))
    used = tf.transpose(used)  # [B, L+1]: tokens used after each word of the order
    before = tf.pad(used[:, :-1], [[0, 0], [1, 0]])
    taken_sorted = tf.cast(used > before, tf.int32)
    # back from the random order to word indices
    taken = tf.gather(taken_sorted, tf.argsort(order, axis=1), batch_dims=1)
    chosen = tf.gather(taken, word, batch_dims=1) * cand  # [B, L]
    count = tf.reduce_sum(chosen, axis=1)
    slots = tf.broadcast_to(tf.range(n)[tf.newaxis], [batch, n])
    positions = nth_true_index(tf.cumsum(chosen, axis=1), slots)
    return positions, tf.sequence_mask(count, n, dtype=tf.int32)


SAMPLING_BLOCK = 128


def categorical_sample(logits: tf.Tensor, key: tf.Tensor, example_ids: tf.Tensor) -> tf.Tensor:
    """One categorical draw per row of logits [B, N, V] (float32), with no gradient.

    Inverse-CDF sampling in two stages, so that a draw costs one exp per vocab entry and two
    uniforms per row (Gumbel-max needs a uniform and two logs per vocab entry): a block of
    `SAMPLING_BLOCK` consecutive ids is drawn from the blocks' total probabilities, then an id
    within it. The uniforms are keyed by (key, example content, slot) as all of the objective's
    randomness. Ids of probability 0 (a logit -1000 below the rest) are never drawn.
    """
    logits = tf.cast(logits, tf.float32)
    batch, n, vocab = tf.shape(logits)[0], tf.shape(logits)[1], tf.shape(logits)[2]
    num_blocks = (vocab + SAMPLING_BLOCK - 1) // SAMPLING_BLOCK
    weights = tf.exp(logits - tf.reduce_max(logits, axis=-1, keepdims=True))  # unnormalised
    weights = tf.pad(weights, [[0, 0], [0, 0], [0, num_blocks * SAMPLING_BLOCK - vocab]])
    weights = tf.reshape(weights, [batch, n, num_blocks, SAMPLING_BLOCK])
    u = counter_uniform(key, example_counters(example_ids, [2, logits.shape[1]]))  # [B, 2, N]
    block = _inverse_cdf(tf.reduce_sum(weights, axis=-1), u[:, 0])  # [B, N]
    within = _inverse_cdf(tf.gather(weights, block, batch_dims=2), u[:, 1])
    return tf.stop_gradient(block * SAMPLING_BLOCK + within)


def _inverse_cdf(weights: tf.Tensor, u: tf.Tensor) -> tf.Tensor:
    """The index i [..] with cdf[i-1] <= u·total < cdf[i] over the last axis of weights [.., K]
    (unnormalised, >= 0); u in [0, 1)."""
    cdf = tf.cumsum(weights, axis=-1)
    target = u * cdf[..., -1]
    index = tf.reduce_sum(tf.cast(cdf <= target[..., tf.newaxis], tf.int32), axis=-1)
    return tf.minimum(index, tf.shape(weights)[-1] - 1)
