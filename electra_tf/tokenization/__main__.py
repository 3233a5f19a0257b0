"""python -m electra_tf.tokenization --vocab_file=V --input=F --output=G

Tokenizes a text file (one text per line) to one line of space-separated WordPiece ids per line.
"""

import os

from absl import app, flags

from electra_tf.errors import UserError, run_main
from electra_tf.tokenization.full_tokenizer import FullTokenizer


def _define_flags() -> None:
    flags.DEFINE_string("vocab_file", None, "WordPiece vocab file (one token per line).")
    flags.DEFINE_string("input", None, "Text file to tokenize, one text per line.")
    flags.DEFINE_string("output", None, "Output file: one line of space-separated ids per line.")
    flags.DEFINE_bool("do_lower_case", True, "Lower-case the text (BERT uncased).")
    flags.DEFINE_bool("strip_accents", True, "Strip accents (only when lower-casing).")


def main(argv: list[str]) -> None:
    if len(argv) > 1:
        raise UserError(f"unexpected arguments: {' '.join(argv[1:])}")
    flag_values = flags.FLAGS
    for name in ("vocab_file", "input", "output"):
        if not flag_values[name].value:
            raise UserError(f"--{name} is required")
    if not os.path.isfile(flag_values.input):
        raise UserError(f"input file not found: {flag_values.input}")
    tokenizer = FullTokenizer(
        flag_values.vocab_file, flag_values.do_lower_case, flag_values.strip_accents
    )
    with open(flag_values.input, encoding="utf-8", errors="replace") as f:
        lines = [line.rstrip("\n") for line in f]
    ids = tokenizer.tokenize_to_ids(lines)
    with open(flag_values.output, "w", encoding="utf-8") as f:
        f.writelines(" ".join(map(str, row)) + "\n" for row in ids)
    print(f"wrote {sum(map(len, ids))} tokens for {len(ids)} lines to {flag_values.output}")


if __name__ == "__main__":
    _define_flags()
    app.run(lambda argv: run_main(lambda: main(argv)))
