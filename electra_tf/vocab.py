"""WordPiece vocab files and BERT's special tokens: the one place that names them."""

import collections
import os
from typing import Dict, Optional, Sequence

import numpy as np

from electra_tf.errors import UserError

PAD, UNK, CLS, SEP, MASK = "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"
SPECIAL_TOKENS = {"pad": PAD, "unk": UNK, "cls": CLS, "sep": SEP, "mask": MASK}
# what pretraining needs, and the ids of the standard BERT uncased vocab (used only where no vocab
# file is at hand: `--describe` without one, FLOP profiling)
PRETRAINING_SPECIAL = ("mask", "cls", "sep", "pad")
BERT_UNCASED_SPECIAL_IDS = {"pad": 0, "cls": 101, "sep": 102, "mask": 103}


def load_vocab(vocab_file: str) -> Dict[str, int]:
    """Reads a vocab file (one token per line, id = line index) into an ordered dict."""
    vocab = collections.OrderedDict()
    with open(vocab_file, "rb") as f:
        for index, raw in enumerate(f):
            try:
                token = raw.decode("utf-8").strip()
            except UnicodeDecodeError as e:
                raise UserError(
                    f"{vocab_file}: line {index + 1}: not UTF-8 ({e.reason} at byte {e.start}): "
                    "a vocab file is UTF-8 text, one token per line"
                ) from None
            vocab[token] = index
    return vocab


def read_vocab(vocab_file: str) -> Dict[str, int]:
    """`load_vocab`, with a one-line error for a missing or empty file."""
    if not os.path.exists(vocab_file):
        raise UserError(f"{vocab_file}: no such vocab file")
    vocab = load_vocab(vocab_file)
    if not vocab:
        raise UserError(f"{vocab_file}: the vocab file is empty")
    return vocab


def special_token_ids(
    vocab: Dict[str, int], vocab_file: str, keys: Sequence[str] = PRETRAINING_SPECIAL
) -> Dict[str, int]:
    """{"mask": id, "cls": id, ...} for `keys`; a token the vocab lacks is an error naming it."""
    ids = {}
    for key in keys:
        token = SPECIAL_TOKENS[key]
        if token not in vocab:
            raise UserError(f"{vocab_file}: the vocab has no {token} token")
        ids[key] = vocab[token]
    return ids


def vocab_tokens(vocab: Dict[str, int]) -> list:
    """The tokens in id order (gaps as empty strings)."""
    tokens = [""] * (max(vocab.values()) + 1)
    for token, i in vocab.items():
        tokens[i] = token
    return tokens


CONTINUATION_PREFIX = "##"


def continuation_table(vocab: Dict[str, int]) -> np.ndarray:
    """bool [V]: True for WordPiece continuation pieces (`##...`, the inside of a word), what
    whole-word masking groups with the token before them."""
    table = np.zeros(max(vocab.values()) + 1, bool)
    for token, i in vocab.items():
        table[i] = token.startswith(CONTINUATION_PREFIX)  # BERT's whole-word rule
    return table


def unk_id(vocab: Dict[str, int], default: Optional[int] = 0) -> Optional[int]:
    return vocab.get(UNK, default)
