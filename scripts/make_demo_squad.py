"""Builds a small SQuAD-format data set from the bundled Wikipedia sample, deterministically.

Each context is a run of consecutive sentences of one article. A question is a window of a
context sentence around an answer span (a year/number, or a run of capitalised words not at the
sentence start), with the span replaced by "what"; the answer is that span. With
`--version v2.0`, about a third of the questions are unanswerable: they are made the same way
from a sentence of another article. Articles are split between train and dev, so dev contexts
are unseen.

    python scripts/make_demo_squad.py --output_dir runs/qa_demo/finetuning_data/squad

writes `train.json` and `dev.json` in the official SQuAD layout.
"""

import json
import os
import random
import re

from absl import app, flags

from electra_tf.errors import UserError, run_main
from electra_tf.pretraining_data.corpus import read_documents

FLAGS = flags.FLAGS
flags.DEFINE_string(
    "corpus",
    "data/corpus/enwiki_sample.txt",
    "One sentence per line, blank lines between articles.",
)
flags.DEFINE_string("output_dir", None, "Where train.json and dev.json are written.")
flags.DEFINE_enum(
    "version", "v2.0", ["v1.1", "v2.0"], "SQuAD version (v2.0 adds unanswerable questions)."
)
flags.DEFINE_integer("sentences_per_context", 5, "Sentences in one context.")
flags.DEFINE_integer("max_train", 2000, "Maximum number of training questions.")
flags.DEFINE_integer("max_dev", 300, "Maximum number of dev questions.")
flags.DEFINE_float("dev_fraction", 0.2, "Fraction of the articles used for dev.")
flags.DEFINE_integer("seed", 1, "Random seed.")

_NUMBER = re.compile(r"^\d[\d,.]*$")
_CAPITAL = re.compile(r"^[A-Z][a-zA-Z\-]+$")
_WINDOW = 8  # words of the sentence kept on each side of the answer in the question


def read_articles(path: str) -> list[list[str]]:
    if not os.path.exists(path):
        raise UserError(f"{path}: corpus file not found")
    articles = read_documents(path)
    if not articles:
        raise UserError(f"{path}: no sentences")
    return articles


def answer_spans(words: list[str]) -> list[tuple[int, int]]:
    """Candidate answers (inclusive word ranges): numbers, runs of capitalised words (not first)."""
    spans = []
    i = 1
    while i < len(words):
        w = words[i].strip(",.;:()\"'")
        if w and w == words[i] and (_NUMBER.match(w) or _CAPITAL.match(w)):
            j = i
            if _CAPITAL.match(w):
                while (
                    j + 1 < len(words)
                    and words[j + 1] == words[j + 1].strip(",.;:()\"'")
                    and _CAPITAL.match(words[j + 1])
                    and j - i < 3
                ):
                    j += 1
            spans.append((i, j))
            i = j + 1
        else:
            i += 1
    return spans


def make_question(words: list[str], span: tuple[int, int]) -> str:
    left = words[max(0, span[0] - _WINDOW) : span[0]]
    right = words[span[1] + 1 : span[1] + 1 + _WINDOW]
    q = " ".join(left + ["what"] + right).rstrip(".,;:")
    return q + "?"


def build(
    articles: list[list[str]],
    rng: random.Random,
    version: str,
    n_sent: int,
    limit: int,
    tag: str,
    other: list[list[str]],
) -> dict:
    data = []
    n_questions = 0
    for ai, article in enumerate(articles):
        paragraphs = []
        for pi in range(0, len(article), n_sent):
            sentences = article[pi : pi + n_sent]
            context = " ".join(sentences)
            qas = []
            offset = 0
            for si, sentence in enumerate(sentences):
                words = sentence.split(" ")
                spans = answer_spans(words)
                if spans and n_questions < limit:
                    span = rng.choice(spans)
                    answer = " ".join(words[span[0] : span[1] + 1])
                    start = offset + len(" ".join(words[: span[0]])) + (1 if span[0] else 0)
                    assert context[start : start + len(answer)] == answer
                    qas.append(
                        {
                            "id": f"{tag}-{ai}-{pi}-{si}",
                            "question": make_question(words, span),
                            "answers": [{"text": answer, "answer_start": start}],
                            "is_impossible": False,
                        }
                    )
                    n_questions += 1
                offset += len(sentence) + 1
            if version == "v2.0" and qas and n_questions < limit and rng.random() < 0.5:
                # an unanswerable question from another article's sentence
                for _ in range(10):
                    sentence = rng.choice(rng.choice(other))
                    words = sentence.split(" ")
                    spans = answer_spans(words)
                    if spans and sentence not in context:
                        qas.append(
                            {
                                "id": f"{tag}-{ai}-{pi}-x",
                                "question": make_question(words, rng.choice(spans)),
                                "answers": [],
                                "is_impossible": True,
                            }
                        )
                        n_questions += 1
                        break
            if version == "v1.1":
                for qa in qas:
                    del qa["is_impossible"]
            if qas:
                paragraphs.append({"context": context, "qas": qas})
        if paragraphs:
            data.append({"title": f"{tag}-article-{ai}", "paragraphs": paragraphs})
    return {"version": version, "data": data}


def main(argv: list[str] | None = None) -> None:
    del argv
    if not FLAGS.output_dir:
        raise UserError("--output_dir is required")
    articles = read_articles(FLAGS.corpus)
    rng = random.Random(FLAGS.seed)
    order = list(range(len(articles)))
    rng.shuffle(order)
    n_dev = max(1, round(len(articles) * FLAGS.dev_fraction))
    dev_articles = [articles[i] for i in sorted(order[:n_dev])]
    train_articles = [articles[i] for i in sorted(order[n_dev:])]
    os.makedirs(FLAGS.output_dir, exist_ok=True)
    for split, arts, other, limit in [
        ("train", train_articles, dev_articles, FLAGS.max_train),
        ("dev", dev_articles, train_articles, FLAGS.max_dev),
    ]:
        d = build(arts, rng, FLAGS.version, FLAGS.sentences_per_context, limit, split, other)
        path = os.path.join(FLAGS.output_dir, f"{split}.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(d, f, ensure_ascii=False, indent=1)
        n = sum(len(p["qas"]) for a in d["data"] for p in a["paragraphs"])
        n_imp = sum(
            1 for a in d["data"] for p in a["paragraphs"] for q in p["qas"] if not q["answers"]
        )
        print(f"{path}: {n} questions ({n_imp} unanswerable)")


if __name__ == "__main__":
    app.run(lambda argv: run_main(lambda: main(argv)))
