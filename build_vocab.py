"""Learns a WordPiece vocab.txt from a text corpus with tensorflow-text's vocab learner.

The corpus is split into words with the same BasicTokenizer semantics as `electra_tf.tokenization`
(lower-casing, accent stripping, punctuation and CJK splitting), so the vocab fits the tokenizer.

  python build_vocab.py --corpus='data/corpus/*.txt' --output_file=vocab.txt --vocab_size=30522

With --reserve_unused (default) the low ids follow BERT's layout: [PAD]=0, [unused0..98]=1..99,
[UNK]=100, [CLS]=101, [SEP]=102, [MASK]=103, then the learned tokens. Without it the five special
tokens come first in that order.

With --cjk_char_tokens (Chinese, as Chinese BERT's vocab) every CJK character of the corpus is a
token of its own, right after the reserved ones (most frequent first), and WordPiece is learned
on the other words (Latin script, digits, full-width digits and punctuation) for the ids left:

  python build_vocab.py --corpus='DIR/corpus/*.txt' --output_file=vocab.txt --vocab_size=8000 \
      --cjk_char_tokens
"""

import collections
import glob
import os
import sys
import tempfile

import tensorflow as tf
from absl import app, flags
from tensorflow_text.tools.wordpiece_vocab import wordpiece_tokenizer_learner_lib as learner

from electra_tf.errors import UserError, run_main
from electra_tf.tokenization import GraphTokenizer
from electra_tf.tokenization.reference import is_chinese_char
from electra_tf.vocab import CLS, MASK, PAD, SEP, UNK

SPECIAL_TOKENS = [PAD, UNK, CLS, SEP, MASK]
NUM_UNUSED = 99
BATCH_LINES = 8192

FLAGS = flags.FLAGS
flags.DEFINE_string("corpus", None, "Glob of text files (one sentence/paragraph per line).")
flags.DEFINE_string("output_file", None, "Where to write the vocab (one token per line).")
flags.DEFINE_integer("vocab_size", 30522, "Target vocab size, special tokens included.")
flags.DEFINE_bool("do_lower_case", True, "Lower-case the text (BERT uncased).")
flags.DEFINE_bool("strip_accents", True, "Strip accents (only when lower-casing).")
flags.DEFINE_bool("reserve_unused", True, "BERT layout: [PAD], [unused0..98], [UNK] at 100, ...")
flags.DEFINE_bool(
    "cjk_char_tokens", False,
    "Every CJK character of the corpus its own token (Chinese BERT's vocab); WordPiece for the "
    "rest.",
)  # fmt: skip


def reserved_tokens(reserve_unused: bool) -> list[str]:
    """The tokens that open the vocab, in id order."""
    if not reserve_unused:
        return list(SPECIAL_TOKENS)
    return [PAD] + [f"[unused{i}]" for i in range(NUM_UNUSED)] + SPECIAL_TOKENS[1:]


def count_words(
    files: list[str], do_lower_case: bool = True, strip_accents: bool = True
) -> collections.Counter:
    """Word counts of the corpus after BERT's BasicTokenizer (computed in-graph, in batches)."""
    counts: collections.Counter = collections.Counter()
    splitter = _WordSplitter(do_lower_case, strip_accents)
    num_lines = 0
    for path in files:
        with open(path, encoding="utf-8", errors="replace") as f:
            batch = []
            for line in f:
                batch.append(line.encode("utf-8", errors="replace"))
                if len(batch) == BATCH_LINES:
                    counts.update(splitter(batch))
                    num_lines += len(batch)
                    batch = []
                    print(f"  {num_lines} lines, {len(counts)} distinct words", flush=True)
            if batch:
                counts.update(splitter(batch))
                num_lines += len(batch)
    print(f"read {num_lines} lines from {len(files)} file(s): {len(counts)} distinct words")
    return collections.Counter({w.decode("utf-8"): c for w, c in counts.items()})


class _WordSplitter:
    """Lines -> their words after BasicTokenizer (`GraphTokenizer.basic_tokenize`)."""

    def __init__(self, do_lower_case: bool, strip_accents: bool):
        # GraphTokenizer needs a vocab for its wordpiece step; the words only use the tables.
        with tempfile.TemporaryDirectory() as tmp:
            vocab = os.path.join(tmp, "unk_only_vocab.txt")
            with open(vocab, "w", encoding="utf-8") as f:
                f.write(UNK + "\n")
            self._tokenizer = GraphTokenizer(vocab, do_lower_case, strip_accents)

    def __call__(self, lines: list[bytes]) -> list[bytes]:
        words = self._tokenizer.basic_tokenize(tf.constant(lines))
        return words.flat_values.numpy().tolist()


def build_vocab(
    files: list[str],
    vocab_size: int,
    do_lower_case: bool = True,
    strip_accents: bool = True,
    reserve_unused: bool = True,
    cjk_char_tokens: bool = False,
) -> list[str]:
    """Learns the vocab; returns its tokens in id order (at most `vocab_size`). With
    `cjk_char_tokens`, every CJK character of the corpus (a word of its own after BERT's
    BasicTokenizer) is a token, most frequent first, and WordPiece is learned on the rest."""
    reserved = reserved_tokens(reserve_unused)
    if vocab_size <= len(reserved):
        raise UserError(f"--vocab_size={vocab_size} leaves no room after {len(reserved)} reserved")
    counts = count_words(files, do_lower_case, strip_accents)
    if not counts:
        raise UserError(f"the corpus has no words: {', '.join(files)}")
    chars: list[str] = []
    if cjk_char_tokens:
        chars, counts = split_cjk_chars(counts)
        print(f"{len(chars)} CJK characters, each a token", flush=True)
        if vocab_size < len(reserved) + len(chars):
            raise UserError(
                f"--vocab_size={vocab_size} has no room for the corpus's {len(chars)} CJK "
                f"characters after {len(reserved)} reserved tokens: give at least "
                f"{len(reserved) + len(chars)}"
            )
    room = vocab_size - len(reserved) - len(chars)
    learned = []
    if counts and room > 0:
        print(f"learning a WordPiece vocab of {room} tokens ...", flush=True)
        learned = learner.learn(counts, room, reserved_tokens=[], lower_thresh=1)
    taken = set(reserved) | set(chars)
    vocab = reserved + chars + [t for t in learned if t not in taken]
    if len(vocab) > vocab_size:
        print(f"truncating {len(vocab)} tokens to --vocab_size={vocab_size}", file=sys.stderr)
        vocab = vocab[:vocab_size]
    return vocab


def split_cjk_chars(counts: collections.Counter) -> tuple[list[str], collections.Counter]:
    """(the CJK characters among the words, most frequent first, ties by code point; the
    other words' counts)."""
    is_cjk = {w for w in counts if len(w) == 1 and is_chinese_char(ord(w))}
    chars = sorted(is_cjk, key=lambda w: (-counts[w], ord(w)))
    return chars, collections.Counter({w: c for w, c in counts.items() if w not in is_cjk})


def main(argv: list[str]) -> None:
    if len(argv) > 1:
        raise UserError(f"unexpected arguments: {' '.join(argv[1:])}")
    if not FLAGS.corpus:
        raise UserError("--corpus is required (a glob of text files)")
    if not FLAGS.output_file:
        raise UserError("--output_file is required")
    files = sorted(f for f in glob.glob(FLAGS.corpus) if os.path.isfile(f))
    if not files:
        raise UserError(f"--corpus={FLAGS.corpus} matches no file")
    if all(os.path.getsize(f) == 0 for f in files):
        raise UserError(f"--corpus={FLAGS.corpus}: every matched file is empty")
    vocab = build_vocab(
        files,
        FLAGS.vocab_size,
        FLAGS.do_lower_case,
        FLAGS.strip_accents,
        FLAGS.reserve_unused,
        FLAGS.cjk_char_tokens,
    )
    out_dir = os.path.dirname(os.path.abspath(FLAGS.output_file))
    os.makedirs(out_dir, exist_ok=True)
    with open(FLAGS.output_file, "w", encoding="utf-8") as f:
        f.writelines(token + "\n" for token in vocab)
    print(f"wrote {len(vocab)} tokens to {FLAGS.output_file}")


if __name__ == "__main__":
    app.run(lambda argv: run_main(lambda: main(argv)))
