"""Chinese text round trip: on 1,000 real lines of the Chinese pretraining corpus (none held out;
tests/data/chinese/README.md), with the Chinese recipe's vocab (every CJK character a token,
WordPiece for the rest), the pure-Python reference tokenizer, FullTokenizer (tensorflow-text),
Hugging Face's BERT tokenizer (`tokenizers`) and an exported SavedModel's `serve_text` signature
give the same ids; full-width digits and punctuation are split as BERT's tokenizer splits them."""

import os

import numpy as np
import pytest
import tensorflow as tf

from electra_tf import export, run_dir
from electra_tf.checkpoint import load_model
from electra_tf.io_utils import read_json
from electra_tf.pretraining_config import PretrainingConfig
from electra_tf.pretraining_networks import build_pretrainer
from electra_tf.tokenization import BasicTokenizer, FullTokenizer, ReferenceTokenizer
from electra_tf.tokenization.reference import is_chinese_char
from electra_tf.vocab import read_vocab, special_token_ids

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LINES = os.path.join(ROOT, "tests", "data", "chinese", "lines.txt")
RECIPE = os.path.join(ROOT, "experiments", "recipes", "pretrain_chinese.json")
VOCAB = os.path.join(ROOT, read_json(RECIPE)["vocab_file"])
MAX_LEN = 128  # every shipped line has at most 120 characters: no id is cut off


def lines() -> list[str]:
    with open(LINES, encoding="utf-8") as f:
        return f.read().splitlines()


def test_the_shipped_lines_and_the_vocab():
    text = lines()
    assert len(text) == len(set(text)) == 1000 and max(map(len, text)) <= 120
    vocab = read_vocab(VOCAB)
    chars = {c for line in text for c in line if is_chinese_char(ord(c))}
    assert chars <= set(vocab)  # every CJK character of the corpus is a token ...
    assert not any(f"##{c}" in vocab for c in chars)  # ... and never a ## piece
    assert [t for t, i in vocab.items() if i in (0, 100, 101, 102, 103)] == [
        "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"
    ]  # fmt: skip


def test_full_width_digits_and_punctuation_as_bert_splits_them():
    # by hand, from BERT's BasicTokenizer rules: CJK characters and punctuation (category P*,
    # full-width ones too: ，％（）) are tokens of their own; full-width digits and letters are
    # no CJK characters, so a run of them is one word (lower-cased: Ｇ -> ｇ) for WordPiece
    line = "１９９８年，ＧＤＰ增长８％（据新华社）。iPhone 6s价格2,999元"
    assert BasicTokenizer().tokenize(line) == [
        "１９９８", "年", "，", "ｇｄｐ", "增", "长", "８", "％", "（", "据", "新", "华", "社", "）",
        "。", "iphone", "6s", "价", "格", "2", ",", "999", "元",
    ]  # fmt: skip
    ref = ReferenceTokenizer(VOCAB).tokenize(line)
    assert FullTokenizer(VOCAB).tokenize(line) == ref
    for word in ("年", "，", "增", "％", "（", "。", "价", "元"):
        assert word in ref  # in the vocab, whole
    assert "[UNK]" not in ref


def hf_ids(text: list[str]) -> list[list[int]]:
    from tokenizers import BertWordPieceTokenizer

    # BERT's normaliser (clean text, CJK characters spaced, lower case, accents stripped), its
    # pre-tokenizer (whitespace and punctuation) and WordPiece on our vocab file
    tok = BertWordPieceTokenizer(VOCAB, lowercase=True, strip_accents=True)
    return [e.ids for e in tok.encode_batch(text, add_special_tokens=False)]


@pytest.fixture(scope="module")
def saved_model(tmp_path_factory) -> str:
    """A tiny random discriminator on the Chinese vocab, exported with its text signatures."""
    d = str(tmp_path_factory.mktemp("zh_run"))
    vocab = read_vocab(VOCAB)
    config = PretrainingConfig.from_flat(
        "t", "/nonexistent",
        {"model_size": "small", "embedding_size": 16, "max_seq_length": MAX_LEN,
         "model_hparam_overrides": {"hidden_size": 16, "num_hidden_layers": 1,
                                    "num_attention_heads": 1, "intermediate_size": 32}},
    )  # fmt: skip
    model = build_pretrainer(config, len(vocab), special_token_ids(vocab, VOCAB))
    disc, gen = config.model_configs(len(vocab))
    run_dir.write_run_config(
        os.path.join(d, "config.json"), run_dir.PRETRAINING, config.to_flat(), disc, gen
    )
    prefix = tf.train.Checkpoint(model=model).save(os.path.join(d, "ckpt"))
    loaded = load_model.load_networks(prefix, None, "discriminator")
    out = os.path.join(d, "saved")
    export.export_saved_model(loaded, "discriminator", out, VOCAB, max_seq_length=MAX_LEN)
    return out


def test_four_tokenizers_give_the_same_ids(saved_model):
    text = lines()
    ref = ReferenceTokenizer(VOCAB)
    want = [ref.convert_tokens_to_ids(ref.tokenize(line)) for line in text]
    assert sum(map(len, want)) > 30_000  # real text: about 31 ids a line
    unk = read_vocab(VOCAB)["[UNK]"]
    assert sum(i == unk for ids in want for i in ids) == 0  # the corpus's vocab covers its text
    assert FullTokenizer(VOCAB).tokenize_to_ids(text) == want
    assert hf_ids(text) == want
    served = tf.saved_model.load(saved_model).signatures["serve_text"]
    got = served(text=tf.constant(text))
    ids, mask = got["input_ids"].numpy(), got["input_mask"].numpy()
    for row, m, expected in zip(ids, mask, want):
        packed = [101] + expected + [102]  # [CLS] the line [SEP], then padding
        assert row[: m.sum()].tolist() == packed and not row[m.sum() :].any()
    assert np.all(got["segment_ids"].numpy() == 0)
