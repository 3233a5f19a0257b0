"""The Chinese experiment's two fine-tuning tasks as custom tasks (task.json), their seeded
splits, and the label subsets the experiment trains on.

  chinese_sentiment  product and book reviews, negative / positive (classification, accuracy)
  chinese_pos        joint word segmentation and POS tagging of People's Daily sentences: every
                     character one token, tagged B-/I-/E-/S-<PKU POS> (BIOES); scored by span F1
                     over the (word, POS) spans (the tagging kind's `span_f1`)

Splits (`split_tasks`): reviews (deduplicated; a text with both labels dropped) are permuted by
the seed, dev and validation taken first; articles are permuted by the seed and their sentences
go to dev, then validation, until each holds its size, the rest to train (no article is split,
and a sentence text of dev is in no other split, one of validation in no train).
"""

import json
import os
import random
from typing import Dict, List, NamedTuple, Optional, Sequence

from electra_tf import data_layout
from electra_tf.io_utils import write_atomically
from experiments.chinese import text
from experiments.transfer_data import label_subset

SENTIMENT, TAGGING = "chinese_sentiment", "chinese_pos"
SPLITS = ("train", "validation", "dev")
SPLIT_SIZES = {SENTIMENT: {"dev": 2000, "validation": 2000},
               TAGGING: {"dev": 2000, "validation": 2000}}  # fmt: skip
REVIEW_LABELS = ("neg", "pos")
TSV_HEADER = "sentence\tlabel"
MAX_SEQ_LENGTH = 128  # characters are tokens: 99% of the sentences fit, 78% of the reviews
SENTIMENT_SPEC = {
    "type": "classification", "format": "tsv", "header": True, "text_a": "sentence",
    "text_b": None, "label": "label", "labels": list(REVIEW_LABELS), "metrics": ["accuracy"],
    "max_seq_length": MAX_SEQ_LENGTH,
}  # fmt: skip
TAGGING_SPEC = {"type": "tagging", "format": "conll", "metrics": ["span_f1"],
                "max_seq_length": MAX_SEQ_LENGTH}  # fmt: skip


def dedupe_reviews(neg: Sequence[str], pos: Sequence[str], exclude=frozenset()) -> List[tuple]:
    """(text, label) of every distinct cleaned review, first occurrence order (negatives first);
    a text under both labels, an empty one, or one in `exclude` is dropped."""
    labels: Dict[str, set] = {}
    order = []
    for label, lines in zip(REVIEW_LABELS, (neg, pos)):
        for line in lines:
            t = text.clean_review(line)
            if not t or t in exclude:
                continue
            if t not in labels:
                labels[t] = set()
                order.append(t)
            labels[t].add(label)
    return [(t, next(iter(labels[t]))) for t in order if len(labels[t]) == 1]


def split_tasks(reviews, articles, seed: int, sizes=SPLIT_SIZES, exclude=frozenset()) -> dict:
    """{task: {split: examples}}: sentiment examples are (text, label), tagging examples are
    sentences (lists of (word, POS)); see the module docstring."""
    rng = random.Random(f"electra_tf-chinese-{seed}-{SENTIMENT}")
    order = list(range(len(reviews)))
    rng.shuffle(order)
    s = sizes[SENTIMENT]
    sentiment = {"dev": [reviews[i] for i in order[: s["dev"]]],
                 "validation": [reviews[i] for i in order[s["dev"]: s["dev"] + s["validation"]]],
                 "train": [reviews[i] for i in order[s["dev"] + s["validation"]:]]}  # fmt: skip
    rng = random.Random(f"electra_tf-chinese-{seed}-{TAGGING}")
    order = list(range(len(articles)))
    rng.shuffle(order)
    tagging: Dict[str, list] = {split: [] for split in SPLITS}
    seen = set(exclude)  # sentence texts of the splits filled so far
    for i in order:
        split = next((k for k in ("dev", "validation") if len(tagging[k]) < sizes[TAGGING][k]),
                     "train")  # fmt: skip
        for words in articles[i]:
            for sentence in text.split_sentences(words):
                if text.sentence_text(sentence) not in seen:
                    tagging[split].append(sentence)
        if split != "train":
            seen |= {text.sentence_text(x) for x in tagging[split]}
    return {SENTIMENT: sentiment, TAGGING: tagging}


class UnlabelledText(NamedTuple):
    reviews: set  # validation and dev reviews (cleaned text)
    sentences: set  # validation and dev sentences of the tagging task


def unlabelled_text(splits: dict) -> UnlabelledText:
    """The text the pretraining corpus leaves out: the validation and dev splits'."""
    held = ("validation", "dev")
    return UnlabelledText(
        {t for k in held for t, _ in splits[SENTIMENT][k]},
        {text.sentence_text(x) for k in held for x in splits[TAGGING][k]},
    )


def _conll(sentence) -> str:
    return "\n".join(f"{c}\t{tag}" for c, tag in text.bioes_tags(sentence))


def write_splits(out_dir: str, splits: dict) -> None:
    """DIR/splits/TASK/{train,validation,dev}.{tsv,txt} and each task's task.json (the tagging
    task's `labels`: S-<type> of every POS type in its splits)."""
    d = os.path.join(out_dir, "splits", SENTIMENT)
    os.makedirs(d, exist_ok=True)
    for split in SPLITS:
        rows = [f"{t}\t{label}" for t, label in splits[SENTIMENT][split]]
        _write(os.path.join(d, f"{split}.tsv"), "\n".join([TSV_HEADER, *rows]) + "\n")
    _write(os.path.join(d, "task.json"), json.dumps(SENTIMENT_SPEC, indent=1) + "\n")
    d = os.path.join(out_dir, "splits", TAGGING)
    os.makedirs(d, exist_ok=True)
    types = set()
    for split in SPLITS:
        sentences = splits[TAGGING][split]
        types |= {pos for s in sentences for _, pos in s}
        _write(os.path.join(d, f"{split}.txt"), "\n\n".join(map(_conll, sentences)) + "\n")
    spec = {**TAGGING_SPEC, "labels": [f"S-{t}" for t in sorted(types)]}
    _write(os.path.join(d, "task.json"), json.dumps(spec, indent=1) + "\n")


def _write(path: str, content: str) -> None:
    if not os.path.exists(path) or open(path, encoding="utf-8").read() != content:
        write_atomically(path, lambda f: f.write(content))


def read_split(prepared_dir: str, task: str, split: str) -> List[str]:
    """A split's examples as text: tsv rows (no header), or conll sentence blocks."""
    ext = "tsv" if task == SENTIMENT else "txt"
    with open(os.path.join(prepared_dir, "splits", task, f"{split}.{ext}"), encoding="utf-8") as f:
        content = f.read()
    if task == SENTIMENT:
        return [line for line in content.splitlines()[1:] if line]
    return [block.strip("\n") for block in content.split("\n\n") if block.strip()]


def write_task(
    data_dir: str, prepared_dir: str, task: str, split: str, n_label: Optional[int], seed: int
) -> str:
    """Makes DATA_DIR/finetuning_data/TASK train on seed's nested subset of n_label training
    examples (None: all, in file order) and score on `split` (validation or dev); files are
    rewritten only when their text differs. Returns the task's directory."""
    pool = read_split(prepared_dir, task, "train")
    if n_label is not None and n_label > len(pool):
        raise ValueError(f"label count {n_label} > the {len(pool)} training examples of {task}")
    train = pool if n_label is None else label_subset(pool, n_label, seed)
    scored = read_split(prepared_dir, task, split)
    out = data_layout.finetuning_data_dir(data_dir, task)
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(prepared_dir, "splits", task, "task.json"), encoding="utf-8") as f:
        _write(os.path.join(out, "task.json"), f.read())
    if task == SENTIMENT:
        for name, rows in (("train", train), ("dev", scored)):
            _write(os.path.join(out, f"{name}.tsv"), "\n".join([TSV_HEADER, *rows]) + "\n")
    else:
        for name, blocks in (("train", train), ("dev", scored)):
            _write(os.path.join(out, f"{name}.txt"), "\n\n".join(blocks) + "\n")
    return out
