"""`ExampleBuilder`: a stream of sentences -> pretraining examples, as the original.

The builder reproduces `build_pretraining_dataset.py` of google-research/electra exactly (one line
= one sentence, a blank line ends a document, 10% single-segment examples, the segment-assignment
rule with its quirk, trimming by max_length, a 5% chance that the next example has a short random
target length); every random draw comes from an injected `random.Random`, so a build is
reproducible given a seed.
"""

import random
from collections.abc import Sequence
from typing import NamedTuple

from electra_tf.errors import UserError
from electra_tf.packing import pack, pad
from electra_tf.vocab import CLS, SEP


class PretrainingExample(NamedTuple):
    """One example as three int lists of length max_length."""

    input_ids: list
    input_mask: list
    segment_ids: list


class ExampleBuilder:
    """Turns a stream of lines (one sentence each) into pretraining examples, as the original.

    Args:
        tokenizer: has `.vocab` (with `[CLS]`, `[SEP]`) and `.tokenize_to_ids(list[str])`; only
            `add_line` uses the latter.
        max_length: the example length (max_seq_length).
        rng: every random draw (single-segment choice, segment split, short target) comes from it,
            in the original's order.

    Example:
        >>> builder = ExampleBuilder(tokenizer, 128, random.Random(0))
        >>> examples = [e for e in map(builder.add_line, lines + [""]) if e is not None]
    """

    def __init__(self, tokenizer, max_length: int, rng: random.Random):
        self._tokenizer = tokenizer
        self._max_length = max_length
        self._rng = rng
        for token in (CLS, SEP):
            if token not in tokenizer.vocab:
                raise UserError(f"the vocab has no {token} token")
        self._cls_id = tokenizer.vocab[CLS]
        self._sep_id = tokenizer.vocab[SEP]
        self._current_sentences: list = []
        self._current_length = 0
        self._target_length = max_length

    @property
    def target_length(self) -> int:
        return self._target_length

    def add_line(self, line: str) -> PretrainingExample | None:
        """Adds a line of text; returns an example when one is complete, else None."""
        line = line.strip().replace("\n", " ")
        if not line:
            return self.end_document()
        return self.add_tokenized_line(self._tokenizer.tokenize_to_ids([line])[0])

    def end_document(self) -> PretrainingExample | None:
        """A blank line: emits the pending example if there is one (== `add_line("")`)."""
        # The original appends the empty sentence when nothing is pending; an empty sentence changes
        # neither the segments nor the random draws, so it is dropped here.
        if self._current_length != 0:
            return self._create_example()
        return None

    def add_tokenized_line(self, token_ids: Sequence[int]) -> PretrainingExample | None:
        """Adds the ids of one non-blank line (a sentence); returns an example when one is
        complete."""
        if not token_ids:
            return None  # no tokens: no effect on the example or on the random draws
        self._current_sentences.append(token_ids)
        self._current_length += len(token_ids)
        if self._current_length >= self._target_length:
            return self._create_example()
        return None

    def _create_example(self) -> PretrainingExample:
        rng = self._rng
        # small chance to only have one segment as in classification tasks
        if rng.random() < 0.1:
            first_segment_target_length = 100000
        else:
            # -3 due to not yet having [CLS]/[SEP] tokens in the input text
            first_segment_target_length = (self._target_length - 3) // 2

        first_segment: list = []
        second_segment: list = []
        for sentence in self._current_sentences:
            # The sentence goes to the first segment if (1) it is empty, (2) the sentence does not
            # put it over length or (3) 50% of the time when it does put it over length. As in the
            # original, (2) does not check that the second segment is empty: a later short
            # sentence can go to A after B.
            if (
                len(first_segment) == 0
                or len(first_segment) + len(sentence) < first_segment_target_length
                or (
                    len(second_segment) == 0
                    and len(first_segment) < first_segment_target_length
                    and rng.random() < 0.5
                )
            ):
                first_segment += sentence
            else:
                second_segment += sentence

        # trim to max_length while accounting for the not-yet-added [CLS]/[SEP] tokens
        first_segment = first_segment[: self._max_length - 2]
        second_segment = second_segment[: max(0, self._max_length - len(first_segment) - 3)]

        # prepare to start building the next example
        self._current_sentences = []
        self._current_length = 0
        # small chance for a random-length instead of a max_length-length example
        if rng.random() < 0.05:
            self._target_length = rng.randint(5, self._max_length)
        else:
            self._target_length = self._max_length
        return self._make_example(first_segment, second_segment)

    def _make_example(self, first_segment: list, second_segment: list) -> PretrainingExample:
        # an empty second segment gets no [SEP] of its own: `[CLS] A [SEP]`
        segments = [first_segment, second_segment] if second_segment else [first_segment]
        input_ids, segment_ids = pack(segments, self._cls_id, self._sep_id)
        input_mask = [1] * len(input_ids)
        length = self._max_length
        return PretrainingExample(
            pad(input_ids, length), pad(input_mask, length), pad(segment_ids, length)
        )
