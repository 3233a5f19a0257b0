"""What a Hugging Face directory says about its tokenizer: `do_lower_case` (tokenizer_config.json,
else the BertNormalizer of tokenizer.json) and the WordPiece vocab (vocab.txt, else the `model`
of tokenizer.json, which transformers 5 writes instead of vocab.txt).

A vocab read from tokenizer.json is written once per process to a temporary `vocab.txt` (this
project's tokenizers read a vocab file); exports and kept fine-tuned models carry a copy.
"""

import os
import tempfile
from typing import Dict, Optional

from electra_tf.errors import UserError
from electra_tf.io_utils import read_json

_EXTRACTED: Dict[str, str] = {}  # tokenizer.json path -> the vocab.txt written from it


def do_lower_case(tokenizer_config: str, tokenizer_json: str) -> Optional[bool]:
    """tokenizer_config.json's `do_lower_case`, else tokenizer.json's normalizer `lowercase`,
    else None (neither says)."""
    if os.path.exists(tokenizer_config):
        d = read_json(tokenizer_config)
        if isinstance(d, dict) and isinstance(d.get("do_lower_case"), bool):
            return d["do_lower_case"]
    if os.path.exists(tokenizer_json):
        normalizer = read_json(tokenizer_json).get("normalizer") or {}
        if isinstance(normalizer, dict) and isinstance(normalizer.get("lowercase"), bool):
            return normalizer["lowercase"]
    return None


def wordpiece_vocab(tokenizer_json: str) -> list:
    """The tokens of tokenizer.json's WordPiece model, in id order."""
    model = read_json(tokenizer_json).get("model") or {}
    if model.get("type") != "WordPiece" or not isinstance(model.get("vocab"), dict):
        raise UserError(
            f"{tokenizer_json}: model {model.get('type')!r} is not a WordPiece vocab "
            "(pass vocab_file)"
        )
    vocab = model["vocab"]
    tokens = [""] * len(vocab)
    for token, i in vocab.items():
        if not isinstance(i, int) or not 0 <= i < len(vocab) or tokens[i]:
            raise UserError(f"{tokenizer_json}: the WordPiece ids are not 0..{len(vocab) - 1}")
        tokens[i] = token
    if any("\n" in t or "\r" in t for t in tokens):
        raise UserError(f"{tokenizer_json}: a token holds a line break (no vocab.txt can hold it)")
    return tokens


def vocab_file(directory: str, vocab_name: str, tokenizer_json_name: str) -> Optional[str]:
    """The directory's `vocab_name` file, else one written from its tokenizer.json, else None."""
    path = os.path.join(directory, vocab_name)
    if os.path.exists(path):
        return path
    source = os.path.abspath(os.path.join(directory, tokenizer_json_name))
    if not os.path.exists(source):
        return None
    if source not in _EXTRACTED:
        tokens = wordpiece_vocab(source)
        out = os.path.join(tempfile.mkdtemp(prefix="electra_tf_hf_vocab_"), vocab_name)
        with open(out, "w", encoding="utf-8") as f:
            f.writelines(t + "\n" for t in tokens)
        _EXTRACTED[source] = out
    return _EXTRACTED[source]
