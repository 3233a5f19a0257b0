"""The pure-Python reference BERT tokenizer: the semantics every other path reproduces.

`BasicTokenizer` (lower-casing, accent stripping only when lower-casing, punctuation split, CJK
spacing, control-character cleanup) then `WordpieceTokenizer` (greedy longest match, `[UNK]` for
words over 200 characters). It is the oracle in tests, the baseline in benchmarks, and what
question answering uses to align answers. The character classes below are also what the
normalisation tables (`normalization_tables`) are computed from.
"""

import unicodedata

from electra_tf.vocab import UNK, load_vocab

MAX_CHARS_PER_WORD = 200


def is_whitespace(char: str) -> bool:
    if char in (" ", "\t", "\n", "\r"):
        return True
    return unicodedata.category(char) == "Zs"


def is_control(char: str) -> bool:
    if char in ("\t", "\n", "\r"):
        return False
    return unicodedata.category(char).startswith("C")


def is_punctuation(char: str) -> bool:
    cp = ord(char)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(char).startswith("P")


def is_chinese_char(cp: int) -> bool:
    return (
        0x4E00 <= cp <= 0x9FFF
        or 0x3400 <= cp <= 0x4DBF
        or 0x20000 <= cp <= 0x2A6DF
        or 0x2A700 <= cp <= 0x2B73F
        or 0x2B740 <= cp <= 0x2B81F
        or 0x2B820 <= cp <= 0x2CEAF
        or 0xF900 <= cp <= 0xFAFF
        or 0x2F800 <= cp <= 0x2FA1F
    )


class BasicTokenizer:
    """Splits text into words and punctuation the way BERT's BasicTokenizer does.

    Args:
        do_lower_case: lower-case the text (BERT uncased).
        strip_accents: strip accents after lower-casing (never without lower-casing).
    """

    def __init__(self, do_lower_case: bool = True, strip_accents: bool = True):
        self.do_lower_case = do_lower_case
        self.strip_accents = strip_accents

    def tokenize(self, text: str) -> list[str]:
        text = self._clean_text(text)
        text = self._tokenize_chinese_chars(text)
        tokens = []
        for token in text.strip().split():
            if self.do_lower_case:
                token = token.lower()
                if self.strip_accents:
                    token = self._run_strip_accents(token)
            tokens.extend(self._run_split_on_punc(token))
        return " ".join(tokens).split()

    @staticmethod
    def _run_strip_accents(text: str) -> str:
        text = unicodedata.normalize("NFD", text)
        return "".join(c for c in text if unicodedata.category(c) != "Mn")

    @staticmethod
    def _run_split_on_punc(text: str) -> list[str]:
        output: list[list[str]] = []
        start_new_word = True
        for char in text:
            if is_punctuation(char):
                output.append([char])
                start_new_word = True
            else:
                if start_new_word:
                    output.append([])
                start_new_word = False
                output[-1].append(char)
        return ["".join(x) for x in output]

    @staticmethod
    def _tokenize_chinese_chars(text: str) -> str:
        output = []
        for char in text:
            if is_chinese_char(ord(char)):
                output.extend((" ", char, " "))
            else:
                output.append(char)
        return "".join(output)

    @staticmethod
    def _clean_text(text: str) -> str:
        output = []
        for char in text:
            cp = ord(char)
            if cp == 0 or cp == 0xFFFD or is_control(char):
                continue
            output.append(" " if is_whitespace(char) else char)
        return "".join(output)


class WordpieceTokenizer:
    """Greedy longest-match-first WordPiece with the `##` continuation prefix.

    Args:
        vocab: token -> id.
        unk_token: what a word with no WordPiece split (or too long) becomes.
        max_input_chars_per_word: longer words are `unk_token`.
    """

    def __init__(
        self,
        vocab: dict[str, int],
        unk_token: str = UNK,
        max_input_chars_per_word: int = MAX_CHARS_PER_WORD,
    ):
        self.vocab = vocab
        self.unk_token = unk_token
        self.max_input_chars_per_word = max_input_chars_per_word

    def tokenize(self, text: str) -> list[str]:
        output = []
        for word in text.strip().split():
            if len(word) > self.max_input_chars_per_word:
                output.append(self.unk_token)
                continue
            pieces = []
            start = 0
            while start < len(word):
                end = len(word)
                piece = None
                while start < end:
                    candidate = word[start:end]
                    if start > 0:
                        candidate = "##" + candidate
                    if candidate in self.vocab:
                        piece = candidate
                        break
                    end -= 1
                if piece is None:
                    pieces = None
                    break
                pieces.append(piece)
                start = end
            output.extend(pieces if pieces is not None else [self.unk_token])
        return output


class ReferenceTokenizer:
    """Pure-Python BERT tokenizer (BasicTokenizer then WordPiece): the semantics we reproduce.

    Args:
        vocab_file: WordPiece vocab, one token per line (id = line index).
        do_lower_case: lower-case the text (BERT uncased).
        strip_accents: strip accents after lower-casing (never without lower-casing).
    """

    def __init__(self, vocab_file: str, do_lower_case: bool = True, strip_accents: bool = True):
        self.vocab = load_vocab(vocab_file)
        self.inv_vocab = {v: k for k, v in self.vocab.items()}
        self.basic_tokenizer = BasicTokenizer(do_lower_case, strip_accents)
        self.wordpiece_tokenizer = WordpieceTokenizer(self.vocab)

    @classmethod
    def from_vocab(
        cls, vocab: dict[str, int], inv_vocab: dict[int, str], basic_tokenizer: BasicTokenizer
    ) -> "ReferenceTokenizer":
        """A tokenizer on an already loaded vocab (shared, not copied)."""
        tokenizer = cls.__new__(cls)
        tokenizer.vocab, tokenizer.inv_vocab = vocab, inv_vocab
        tokenizer.basic_tokenizer = basic_tokenizer
        tokenizer.wordpiece_tokenizer = WordpieceTokenizer(vocab)
        return tokenizer

    def tokenize(self, text: str) -> list[str]:
        return [
            piece
            for word in self.basic_tokenizer.tokenize(text)
            for piece in self.wordpiece_tokenizer.tokenize(word)
        ]

    def convert_tokens_to_ids(self, tokens: list[str]) -> list[int]:
        return [self.vocab[t] for t in tokens]

    def convert_ids_to_tokens(self, ids: list[int]) -> list[str]:
        return [self.inv_vocab[i] for i in ids]

    def tokenize_to_ids(self, texts: list[str]) -> list[list[int]]:
        return [self.convert_tokens_to_ids(self.tokenize(t)) for t in texts]
