"""A pretraining example as a `tf.train.Example` (three int64 features of length max_seq_length,
and `word_starts` where the build recorded a segmenter's word boundaries), and its serialised
bytes encoded directly."""

import tensorflow as tf

from electra_tf.pretraining_data.example_builder import PretrainingExample

FEATURE_NAMES = ("input_ids", "input_mask", "segment_ids")
WORD_STARTS = "word_starts"  # optional: 1 where a segmenter's word starts (`segmentation`)
OPTIONAL_FEATURES = (WORD_STARTS,)


def make_tf_example(example: PretrainingExample) -> tf.train.Example:
    """The `tf.train.Example` with the three int64 features (and `word_starts` where set)."""
    names = FEATURE_NAMES + ((WORD_STARTS,) if example.word_starts is not None else ())
    feature = {
        name: tf.train.Feature(int64_list=tf.train.Int64List(value=values))
        for name, values in zip(names, example)
    }
    return tf.train.Example(features=tf.train.Features(feature=feature))


def _varint(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _length_delimited(tag: bytes, payload: bytes) -> bytes:
    return tag + _varint(len(payload)) + payload


class ExampleSerializer:
    """`make_tf_example(example).SerializeToString()`, encoded directly (several times faster).

    The protobuf wire format of Example{features{feature{key: Feature{int64_list{packed values}}}}};
    ids are looked up in a table of varint encodings (ids below `vocab_size`; mask and segment ids
    are 0/1). Keys go in `FEATURE_NAMES` order (then `word_starts`, where set), which is sorted,
    as in protobuf's deterministic serialisation.

    Args:
        vocab_size: one more than the largest id an example may hold.
    """

    def __init__(self, vocab_size: int):
        self._varints = [_varint(i) for i in range(vocab_size)]
        names = FEATURE_NAMES + (WORD_STARTS,)
        self._keys = [_length_delimited(b"\x0a", name.encode()) for name in names]

    def __call__(self, example: PretrainingExample) -> bytes:
        payloads = (
            b"".join([self._varints[i] for i in example.input_ids]),
            bytes(example.input_mask),
            bytes(example.segment_ids),
        )
        if example.word_starts is not None:
            payloads += (bytes(example.word_starts),)
        features = b"".join(
            _length_delimited(
                b"\x0a",  # Features.feature (map entry)
                key  # entry key
                + _length_delimited(  # entry value: Feature
                    b"\x12", _length_delimited(b"\x1a", _length_delimited(b"\x0a", payload))
                ),
            )
            for key, payload in zip(self._keys, payloads)
        )
        return _length_delimited(b"\x0a", features)  # Example.features
