"""Fine-tuning readers, featurisation, scorers and the train step count."""

import math
import os
import shutil

import numpy as np
import pytest

from electra_tf.errors import UserError
from electra_tf.finetune import scorers
from electra_tf.finetune.classification.scorer import ClassificationScorer, RegressionScorer
from electra_tf.finetune.config import FinetuningConfig
from electra_tf.finetune.features import num_train_steps
from electra_tf.finetune.registry import get_task
from electra_tf.finetune.tagging import scorer as tagging_scorer

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data", "finetune")
VOCAB = os.path.join(HERE, os.pardir, "data", "vocab", "vocab.txt")


class FakeTokenizer:
    """Whitespace tokenizer over a growing vocab (the readers' tests need no WordPiece)."""

    def __init__(self):
        self.vocab = {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3}

    def tokenize_to_ids(self, texts):
        return [[self.vocab.setdefault(w, len(self.vocab)) for w in t.split()] for t in texts]


@pytest.fixture(scope="module")
def make_task(tmp_path_factory):
    """`make_task(name, data_dir=None, **hparams)`: the task on the tests' data (a DATA_DIR
    whose finetuning_data/ is tests/data/finetune), or on `data_dir`'s."""
    default = tmp_path_factory.mktemp("data")
    os.symlink(DATA, default / "finetuning_data")

    def make(name, data_dir=None, **hparams):
        config = FinetuningConfig(
            "m", str(data_dir or default), task_names=[name], vocab_file=VOCAB, **hparams
        )
        return get_task(config, name, FakeTokenizer())

    return make


# -- readers: each task's real layout ---------------------------------------------------------------


def test_cola_no_header_four_columns(make_task):
    ex = make_task("cola").get_examples("train")
    assert len(ex) == 5 and ex[0].eid == 0 and ex[4].eid == 4
    assert ex[2].text_a == "They drank the pub." and ex[2].label == "0" and ex[2].text_b is None
    test = make_task("cola").get_examples("test")  # header, sentence in column 1
    assert [e.eid for e in test] == [0, 1] and test[1].text_a.startswith("The car honked")


def test_sst_and_test_split_dummy_label(make_task):
    ex = make_task("sst").get_examples("train")
    assert [e.label for e in ex] == ["1", "0", "1", "1", "0"] and ex[1].eid == 1
    assert ex[1].text_a.strip() == "unflinchingly bleak and desperate"
    test = make_task("sst").get_examples("test")
    assert test[0].text_a == "uneasy mishmash of styles and genres ." and test[0].label == "0"


def test_mrpc_pairs_and_double_unordered(make_task):
    ex = make_task("mrpc").get_examples("train")
    assert len(ex) == 6  # 3 rows + their swapped copies
    assert ex[0].label == "1" and ex[0].text_a.startswith("Amrozi accused")
    assert ex[3].eid == 3 and ex[3].text_a == ex[0].text_b and ex[3].text_b == ex[0].text_a
    assert len(make_task("mrpc").get_examples("dev")) == 3  # dev is not doubled
    assert len(make_task("mrpc", double_unordered=False).get_examples("train")) == 3


def test_sts_regression_columns_from_the_end(make_task):
    task = make_task("sts")
    ex = task.get_examples("dev")
    assert [e.label for e in ex] == [5.0, 3.8, 3.8, 2.6, 4.25]
    assert (
        ex[3].text_a == "Three men are playing chess."
        and ex[3].text_b == "Two men are playing chess."
    )
    assert len(task.get_examples("train")) == 10
    test = task.get_examples("test")  # 9 columns: a=-2, b=-1
    assert test[0].text_a == "A girl is styling her hair." and test[0].label == 0.0
    feats = task.featurize(ex, "dev", False)
    np.testing.assert_allclose(feats["sts_targets"], [1.0, 0.76, 0.76, 0.52, 0.85], rtol=1e-6)


def test_qqp_mnli_qnli_rte_wnli(make_task):
    qqp = make_task("qqp").get_examples("train")
    assert qqp[1].text_a == "How do I control my horny emotions?" and qqp[1].label == "1"
    assert make_task("qqp").get_examples("test")[0].text_b.startswith("Find the remainder")
    mnli = make_task("mnli")
    assert mnli.dev_splits() == ["dev", "dev_mismatched"]
    assert mnli.test_splits() == ["test_matched", "test_mismatched", "diagnostic"]
    dev = mnli.get_examples("dev")  # dev_matched.tsv, 16 columns, gold label last
    assert [e.label for e in dev] == ["neutral", "contradiction"]
    assert dev[0].text_a == "The new rights are nice enough"
    assert mnli.get_examples("train")[3].label == "contradiction"
    assert mnli.get_examples("diagnostic")[0].text_b == "The cat did not sit on the mat."
    assert mnli.get_examples("test_matched")[0].text_b == "Hierbas is a name worth looking out for."
    assert make_task("qnli").get_examples("train")[2].label == "entailment"
    rte = make_task("rte").get_examples("dev")
    assert rte[0].label == "not_entailment" and rte[0].text_b.startswith("Weapons of Mass")
    assert [e.label for e in make_task("wnli").get_examples("train")] == ["1", "1", "0"]


def test_pair_featurization_layout_and_truncation(make_task):
    task = make_task("rte", max_seq_length=12)
    tok = task.tokenizer
    ex = task.get_examples("train")[:1]
    f = task.featurize(ex, "train", True)
    a = tok.tokenize_to_ids([ex[0].text_a])[0]
    b = tok.tokenize_to_ids([ex[0].text_b])[0]
    # 9 + 7 tokens cut to 9 = L - 3, popping from the longer (b on ties): (8,7) (7,7) (7,6)
    # (6,6) (6,5) (5,5) (5,4)
    assert (len(a), len(b)) == (9, 7)
    expect = [2] + a[:5] + [3] + b[:4] + [3]
    assert f["input_ids"][0].tolist() == expect
    assert f["segment_ids"][0].tolist() == [0] * 7 + [1] * 5
    assert f["input_mask"][0].tolist() == [1] * 12
    assert f["rte_label_ids"][0] == 1 and f["rte_eid"][0] == 0


def test_chunk_reader_and_featurization(make_task):
    task = make_task("chunk", max_seq_length=16)
    ex = task.get_examples("train")
    assert len(ex) == 2 and ex[1].eid == 1
    assert ex[0].words[:3] == ["Confidence", "in", "the"] and ex[0].tags[:4] == [
        "B-NP",
        "B-PP",
        "B-NP",
        "I-NP",
    ]
    assert (
        "E-NP" in task.label_list
        and "S-PP" in task.label_list
        and task.label_list == sorted(task.label_list)
    )
    f = task.featurize(ex, "train", True)
    assert f["segment_ids"][0, :3].tolist() == [1, 1, 1]  # the original's quirk
    n = int(f["chunk_labels_mask"][1].sum())
    assert n == 10  # 10 words + [CLS] + [SEP] fit in 16
    assert f["chunk_labeled_positions"][1, :3].tolist() == [1, 2, 3]
    bioes = ["O", "S-PP", "B-NP", "E-NP", "B-NP", "E-NP", "B-NP", "I-NP", "E-NP", "O"]
    ids = f["chunk_labels"][1, :n].tolist()
    assert [task.label_list[i] for i in ids] == bioes
    short = task.featurize(ex[:1], "train", True)  # 13 words: only 14 of 16 positions fit
    assert int(short["chunk_labels_mask"][0].sum()) == 13 and short["input_ids"][0, 14] == 3


def test_ner_docstart_and_case(make_task):
    task = make_task("ner", do_lower_case=False)
    ex = task.get_examples("train")
    assert [len(e.words) for e in ex] == [9, 2, 2]
    assert ex[0].words[0] == "EU" and ex[0].tags[:3] == ["B-ORG", "O", "B-MISC"]
    assert ex[2].words == ["BRUSSELS", "1996-08-22"] and ex[2].tags == ["B-LOC", "O"]
    assert "S-LOC" in task.label_list and "B-PER" in task.label_list and "E-PER" in task.label_list


# -- reader errors: one line naming the file and line -----------------------------------------------


@pytest.fixture
def scratch(tmp_path):
    shutil.copytree(DATA, tmp_path / "finetuning_data")
    return tmp_path


def _write(path, text):
    with open(path, "w") as f:
        f.write(text)


def test_reader_errors_name_file_and_line(scratch, make_task):
    d = scratch / "finetuning_data"
    _write(d / "sst" / "train.tsv", "sentence\tlabel\ngood film\t1\nno label here\n")
    with pytest.raises(UserError, match=r"sst/train\.tsv:3: expected at least 2 tab-separated"):
        make_task("sst", str(scratch)).get_examples("train")
    _write(d / "sst" / "train.tsv", "sentence\tlabel\ngood film\t1\nbad film\tnegative\n")
    with pytest.raises(UserError, match=r"sst/train\.tsv:3: unknown label 'negative'"):
        make_task("sst", str(scratch)).get_examples("train")
    _write(d / "sts" / "dev.tsv", "h\n" + "\t".join(["x"] * 7 + ["a", "b", "five"]) + "\n")
    with pytest.raises(UserError, match=r"sts/dev\.tsv:2: label 'five' is not a number"):
        make_task("sts", str(scratch)).get_examples("dev")
    _write(d / "rte" / "dev.tsv", "")
    with pytest.raises(UserError, match=r"rte/dev\.tsv: empty file"):
        make_task("rte", str(scratch)).get_examples("dev")
    with pytest.raises(UserError, match=r"wnli/test\.tsv: no such file"):
        make_task("wnli", str(scratch)).get_examples("test")
    _write(d / "chunk" / "dev.txt", "He PRP B-NP\nruns\n")
    with pytest.raises(UserError, match=r"chunk/dev\.txt:2: expected a word and a tag"):
        make_task("chunk", str(scratch)).get_examples("dev")
    _write(d / "ner" / "dev.txt", "Paris NNP B-NP X-LOC\n")
    with pytest.raises(UserError, match=r"ner/dev\.txt:1: unknown tag 'X-LOC'"):
        make_task("ner", str(scratch)).get_examples("dev")


def test_train_steps_as_the_original():
    config = FinetuningConfig("m", "d", train_batch_size=32, num_train_epochs=3.0)
    assert num_train_steps(100, config) == (128, 12)  # padded to 128 -> 4 batches x 3 epochs
    config = FinetuningConfig("m", "d", train_batch_size=32, num_train_epochs=2.5)
    assert num_train_steps(64, config) == (64, 5)


# -- scorers against hand-computed values -----------------------------------------------------------


def test_mcc_by_hand():
    # tp=2, tn=2, fp=1, fn=1: (4 - 1) / sqrt(3*3*3*3) = 1/3
    labels = [1, 1, 1, 0, 0, 0]
    preds = [1, 1, 0, 0, 0, 1]
    assert scorers.matthews_corrcoef(labels, preds) == pytest.approx(1 / 3)
    assert scorers.matthews_corrcoef([0, 1, 0], [0, 0, 0]) == 0.0  # constant prediction
    assert scorers.matthews_corrcoef([0, 1], [1, 0]) == pytest.approx(-1.0)


def test_pearson_spearman_with_ties():
    x = [1.0, 2.0, 3.0, 4.0]
    y = [2.0, 4.0, 6.0, 9.0]
    # by hand: dx = [-1.5,-.5,.5,1.5], dy = [-3.25,-1.25,.75,3.75]
    num = 1.5 * 3.25 + 0.5 * 1.25 + 0.5 * 0.75 + 1.5 * 3.75
    den = math.sqrt(5.0 * (3.25**2 + 1.25**2 + 0.75**2 + 3.75**2))
    assert scorers.pearson(x, y) == pytest.approx(num / den)
    assert scorers.average_ranks([10, 20, 20, 30, 20]).tolist() == [1, 3, 3, 5, 3]
    # ranks a = [1, 2.5, 2.5, 4], b = [1, 2, 3, 4]: pearson of ranks = 4.5 / sqrt(4.5 * 5) = 0.9487
    assert scorers.spearman([1, 2, 2, 3], [5, 6, 7, 8]) == pytest.approx(4.5 / math.sqrt(22.5))
    assert scorers.spearman([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)


def test_f1_and_accuracy():
    labels = [1, 1, 0, 0, 1]
    preds = [1, 0, 1, 0, 1]  # tp 2, fp 1, fn 1 -> F1 = 4/6
    assert scorers.binary_f1(labels, preds) == pytest.approx(2 / 3)
    assert scorers.accuracy(labels, preds) == pytest.approx(0.6)
    s = ClassificationScorer(["0", "1"], ("accuracy", "f1"))
    s.update(
        {
            "label_ids": np.array(labels),
            "predictions": np.array(preds),
            "loss": np.array([1.0, 2, 3, 4, 5]),
            "eid": np.array([4, 3, 2, 1, 0]),
        }
    )
    r = s.get_results()
    assert r == pytest.approx({"accuracy": 60.0, "f1": 200 / 3, "loss": 3.0})
    assert s.predictions() == [(0, "1"), (1, "0"), (2, "1"), (3, "0"), (4, "1")]
    # gold: three 1s, two 0s; predicted: three 1s, two 0s (by hand from the lists above)
    assert s.label_counts() == {"gold": {"0": 2, "1": 3}, "predicted": {"0": 2, "1": 3}}
    assert scorers.majority_class_accuracy({"0": 30, "1": 20}) == ("0", 60.0)
    assert scorers.majority_class_accuracy({"neg": 1, "pos": 3}) == ("pos", 75.0)


def test_spans_and_span_f1_with_partial_overlaps():
    assert tagging_scorer.get_span_labels(["B-NP", "I-NP", "O", "B-VP", "B-NP", "I-NP"]) == [
        (0, 1, "NP"),
        (3, 3, "VP"),
        (4, 5, "NP"),
    ]
    # IOB1 (CoNLL-2003): I- after O starts a span
    assert tagging_scorer.get_span_labels(["I-PER", "I-PER", "O", "I-LOC"]) == [
        (0, 1, "PER"),
        (3, 3, "LOC"),
    ]
    assert tagging_scorer.get_tags([(0, 1, "NP"), (3, 3, "VP")], 5, "BIOES") == [
        "B-NP",
        "E-NP",
        "O",
        "S-VP",
        "O",
    ]
    gold = [["B-NP", "I-NP", "I-NP", "O", "B-VP"], ["B-PP", "B-NP", "I-NP"]]
    # sentence 1: gold NP(0,2) VP(4,4); pred NP(0,1) [partial, wrong] + VP(4,4) [right]
    # sentence 2: gold PP(0,0) NP(1,2); pred PP(0,0) [right] NP(1,1) [partial] NP(2,2) [extra]
    pred = [["B-NP", "I-NP", "O", "O", "S-VP"], ["S-PP", "S-NP", "S-NP"]]
    p, r, f1 = tagging_scorer.span_prf(gold, pred)
    assert (p, r) == pytest.approx((2 / 5, 2 / 4))
    assert f1 == pytest.approx(2 * 0.4 * 0.5 / 0.9)


def test_regression_scorer_scale():
    s = RegressionScorer()
    s.update(
        {
            "targets": np.array([0.2, 0.4, 1.0]),
            "predictions": np.array([0.3, 0.5, 0.8]),
            "loss": np.array([0.01, 0.01, 0.04]),
            "eid": np.array([0, 1, 2]),
        }
    )
    r = s.get_results()
    assert r["mse"] == pytest.approx(0.02) and r["spearman"] == pytest.approx(100.0)
    assert s.predictions()[2] == (2, "4")
