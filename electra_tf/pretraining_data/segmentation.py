"""Word boundaries from a word segmenter, for whole-word masking of text whose words WordPiece
cannot see (Chinese: every CJK character is a token, and none is a `##` piece).

`build_pretraining_dataset.py --word_segmenter=jieba` tokenizes each line as before (the same
ids) and records, per token, whether a segmented word starts there (`word_starts`, written to the
TFRecords); whole-word masking then masks all the characters of a word together, as Chinese
BERT-wwm does. The segmenter is an optional dependency (`pip install -e '.[chinese]'`).

A segmenter's word boundary is kept only where BERT's BasicTokenizer also splits (beside
whitespace, punctuation or a CJK character): a boundary inside a run of Latin letters or digits
would cut a WordPiece word in two. So the line's tokens are exactly the concatenation of its
pieces' tokens, and a `##` piece never starts a word.
"""

import logging
from collections.abc import Callable, Sequence

from electra_tf.errors import UserError
from electra_tf.tokenization.reference import is_chinese_char, is_punctuation, is_whitespace

SEGMENTERS = ("jieba",)
EXTRA = "pip install -e '.[chinese]'"


def load_segmenter(name: str) -> Callable[[str], list[str]]:
    """`name`'s segmenter: a line -> its words (their concatenation is the line)."""
    if name not in SEGMENTERS:
        raise UserError(f"--word_segmenter={name}: expected one of {', '.join(SEGMENTERS)}")
    try:
        import jieba
    except ImportError:
        raise UserError(
            f"--word_segmenter={name} needs the {name} package, an optional dependency: {EXTRA}"
        ) from None
    jieba.setLogLevel(logging.WARNING)  # not its dictionary-loading lines in every build job
    return lambda line: list(jieba.cut(line, HMM=True))


def segmenter_version(name: str) -> str:
    from importlib.metadata import version

    return version(name)


def _splits_here(char: str) -> bool:
    """Whether BERT's BasicTokenizer always splits beside this character."""
    return is_whitespace(char) or is_punctuation(char) or is_chinese_char(ord(char))


def pieces(line: str, words: Sequence[str]) -> list[str]:
    """The segmenter's words joined where their boundary is not one of BasicTokenizer's (see the
    module docstring); their concatenation is still the line."""
    if "".join(words) != line:
        raise ValueError(f"the segmenter's words are not the line: {line!r}")
    out: list[str] = []
    for word in words:
        if not word:
            continue
        if out and not (_splits_here(out[-1][-1]) or _splits_here(word[0])):
            out[-1] += word
        else:
            out.append(word)
    return out


class WordStartTokenizer:
    """Token ids and word starts of lines: each line is segmented, its pieces tokenized in one
    batch with `tokenizer.tokenize_to_ids`; a token starts a word when it is a piece's first.

    Args:
        tokenizer: has `tokenize_to_ids(list[str]) -> list[list[int]]`.
        segment: a line -> its words (`load_segmenter`).
    """

    def __init__(self, tokenizer, segment: Callable[[str], list[str]]):
        self.tokenizer = tokenizer
        self.segment = segment

    def tokenize(self, lines: Sequence[str]) -> list[tuple[list[int], list[int]]]:
        """[(ids, word_starts)] per line."""
        per_line = [pieces(line, self.segment(line)) for line in lines]
        flat = [p for ps in per_line for p in ps]
        ids = iter(self.tokenizer.tokenize_to_ids(flat) if flat else [])
        out = []
        for ps in per_line:
            line_ids: list[int] = []
            starts: list[int] = []
            for _ in ps:
                piece = next(ids)
                line_ids += piece
                starts += [1] + [0] * (len(piece) - 1) if piece else []
            out.append((line_ids, starts))
        return out
