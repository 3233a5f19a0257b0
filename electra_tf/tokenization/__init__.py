"""BERT WordPiece tokenization with the reference semantics.

Two implementations of one behaviour:
  * `reference`: `BasicTokenizer` + `WordpieceTokenizer` = `ReferenceTokenizer` (pure Python), the
    reference algorithm of BERT's tokenizer: the oracle in tests, the baseline in benchmarks, and
    what question answering uses to align answers.
  * `FullTokenizer` (`full_tokenizer`): the same ids, computed with tensorflow-text; its in-graph
    part is `GraphTokenizer` (`graph_tokenizer`, a tf.Module for tf.function and SavedModels),
    which applies per-code-point tables (`normalization_tables`, cached on disk by `cache`) and
    FastWordpieceTokenizer (`fast_wordpiece`).

`python -m electra_tf.tokenization --vocab_file=V --input=F --output=G` tokenizes a file.
"""

from electra_tf.tokenization.cache import CACHE_DIR_ENV, cache_dir
from electra_tf.tokenization.full_tokenizer import FullTokenizer
from electra_tf.tokenization.graph_tokenizer import GraphTokenizer
from electra_tf.tokenization.normalization_tables import preload_normalization_tables
from electra_tf.tokenization.reference import (
    MAX_CHARS_PER_WORD,
    BasicTokenizer,
    ReferenceTokenizer,
    WordpieceTokenizer,
)
from electra_tf.vocab import load_vocab

__all__ = [
    "CACHE_DIR_ENV",
    "MAX_CHARS_PER_WORD",
    "BasicTokenizer",
    "FullTokenizer",
    "GraphTokenizer",
    "ReferenceTokenizer",
    "WordpieceTokenizer",
    "cache_dir",
    "load_vocab",
    "preload_normalization_tables",
]
