"""`ExampleBuilder`: a stream of sentences -> pretraining examples, as the original.

The builder reproduces `build_pretraining_dataset.py` of google-research/electra exactly (one line
= one sentence, a blank line ends a document, 10% single-segment examples, the segment-assignment
rule with its quirk, trimming by max_length, a 5% chance that the next example has a short random
target length); every random draw comes from an injected `random.Random`, so a build is
reproducible given a seed.

The original trims what does not fit into max_length and drops it (the sentence that completes an
example usually overshoots it: 22% of the tokens of the movie/Wikipedia corpus at length 64). With
`carry_overflow=True` the trimmed tokens instead start the next example of the same document, so
no text is lost; the default keeps the original's examples exactly.
"""

import random
from collections import deque
from collections.abc import Iterator, Sequence
from typing import NamedTuple

from electra_tf.errors import UserError
from electra_tf.packing import pack, pad
from electra_tf.vocab import CLS, SEP


class PretrainingExample(NamedTuple):
    """One example as three int lists of length max_length, and a fourth where the lines came
    with word boundaries (`word_starts`: 1 where a word starts, [CLS] and [SEP] included)."""

    input_ids: list
    input_mask: list
    segment_ids: list
    word_starts: list | None = None


class ExampleBuilder:
    """Turns a stream of lines (one sentence each) into pretraining examples, as the original.

    Args:
        tokenizer: has `.vocab` (with `[CLS]`, `[SEP]`) and `.tokenize_to_ids(list[str])`; only
            `add_line` uses the latter.
        max_length: the example length (max_seq_length).
        rng: every random draw (single-segment choice, segment split, short target) comes from it,
            in the original's order.
        carry_overflow: the trimmed tokens start the next example (of the same document) instead
            of being dropped. A long sentence can then fill several examples: `add_*` and
            `end_document` return the first, `ready_examples()` the rest (always empty without it).

    Example:
        >>> builder = ExampleBuilder(tokenizer, 128, random.Random(0))
        >>> examples = [e for e in map(builder.add_line, lines + [""]) if e is not None]
    """

    def __init__(
        self, tokenizer, max_length: int, rng: random.Random, carry_overflow: bool = False
    ):
        self._tokenizer = tokenizer
        self._max_length = max_length
        self._rng = rng
        for token in (CLS, SEP):
            if token not in tokenizer.vocab:
                raise UserError(f"the vocab has no {token} token")
        self._cls_id = tokenizer.vocab[CLS]
        self._sep_id = tokenizer.vocab[SEP]
        self._current_sentences: list = []
        self._current_starts: list = []  # each sentence's word starts (or None), in parallel
        self._current_length = 0
        self._target_length = max_length
        self._carry_overflow = carry_overflow
        self._ready: deque = deque()  # carry_overflow: examples made but not yet returned

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
            self._emit(end_of_document=True)
        return self._next_ready()

    def ready_examples(self) -> Iterator[PretrainingExample]:
        """The examples made by the last call beyond the one it returned (carry_overflow only:
        carried text that alone fills examples, and at a document's end all that is left)."""
        while self._ready:
            yield self._ready.popleft()

    def add_tokenized_line(
        self, token_ids: Sequence[int], word_starts: Sequence[int] | None = None
    ) -> PretrainingExample | None:
        """Adds the ids of one non-blank line (a sentence), and optionally its word starts (one
        per id: the example then carries `word_starts`); returns an example when one is
        complete. The ids and the random draws do not depend on `word_starts`."""
        if not token_ids:
            return None  # no tokens: no effect on the example or on the random draws
        if word_starts is not None and len(word_starts) != len(token_ids):
            raise ValueError(f"{len(word_starts)} word starts for {len(token_ids)} ids")
        self._current_sentences.append(token_ids)
        self._current_starts.append(word_starts)
        self._current_length += len(token_ids)
        if self._current_length >= self._target_length:
            self._emit(end_of_document=False)
        return self._next_ready()

    def _next_ready(self) -> PretrainingExample | None:
        return self._ready.popleft() if self._ready else None

    def _emit(self, end_of_document: bool) -> None:
        """Makes the pending example; with carry_overflow, also those the carried tokens fill
        (each takes at least one token, so this ends), and at a document's end, the rest."""
        self._ready.append(self._create_example())
        while self._current_length != 0 and (
            end_of_document or self._current_length >= self._target_length
        ):
            self._ready.append(self._create_example())

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
        starts = self._current_starts
        with_starts = bool(starts) and starts[0] is not None
        if with_starts != all(x is not None for x in starts):
            raise ValueError("some lines of an example came with word starts, others without")
        first_starts: list = []
        second_starts: list = []
        for sentence, sentence_starts in zip(self._current_sentences, starts):
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
                first_starts += sentence_starts or []
            else:
                second_segment += sentence
                second_starts += sentence_starts or []

        # trim to max_length while accounting for the not-yet-added [CLS]/[SEP] tokens
        first_kept = self._max_length - 2
        second_kept = max(0, self._max_length - min(len(first_segment), first_kept) - 3)
        # prepare to start building the next example (carry_overflow: from the trimmed tokens,
        # the first segment's, then the second's)
        self._current_sentences, self._current_starts = [], []
        if self._carry_overflow:
            trimmed = (first_segment[first_kept:], second_segment[second_kept:])
            trimmed_starts = (first_starts[first_kept:], second_starts[second_kept:])
            for piece, piece_starts in zip(trimmed, trimmed_starts):
                if piece:
                    self._current_sentences.append(piece)
                    self._current_starts.append(piece_starts if with_starts else None)
        self._current_length = sum(map(len, self._current_sentences))
        first_segment = first_segment[:first_kept]
        second_segment = second_segment[:second_kept]
        first_starts = first_starts[:first_kept]
        second_starts = second_starts[:second_kept]
        # small chance for a random-length instead of a max_length-length example
        if rng.random() < 0.05:
            self._target_length = rng.randint(5, self._max_length)
        else:
            self._target_length = self._max_length
        example = self._make_example(first_segment, second_segment)
        if not with_starts:
            return example
        segments = [first_starts, second_starts] if second_segment else [first_starts]
        word_starts, _ = pack(segments, 1, 1)  # [CLS] and [SEP] each a word of its own
        return example._replace(word_starts=pad(word_starts, self._max_length))

    def _make_example(self, first_segment: list, second_segment: list) -> PretrainingExample:
        # an empty second segment gets no [SEP] of its own: `[CLS] A [SEP]`
        segments = [first_segment, second_segment] if second_segment else [first_segment]
        input_ids, segment_ids = pack(segments, self._cls_id, self._sep_id)
        input_mask = [1] * len(input_ids)
        length = self._max_length
        return PretrainingExample(
            pad(input_ids, length), pad(input_mask, length), pad(segment_ids, length)
        )
