"""Official SQuAD/MRQA scoring (hand-computed values) and n-best decoding."""

import os

import numpy as np
import pytest

from electra_tf.finetune.qa import features as qa_features
from electra_tf.finetune.qa import metrics as qa_metrics
from electra_tf.finetune.qa import reader as qa_reader
from electra_tf.tokenization import ReferenceTokenizer

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VOCAB = os.path.join(ROOT, "data", "vocab", "vocab.txt")


@pytest.mark.parametrize(
    "text,want",
    [
        ("The  Quick, brown-fox!", "quick brownfox"),
        ("An apple a day", "apple day"),
        ("theatre anathema", "theatre anathema"),  # articles only as whole words
        ("  a\tthe\nan ", ""),
        ("Café “quoted”", "café “quoted”"),  # no accent stripping; non-ASCII quotes stay
        ("A\u00a0b", "b"),  # NBSP is whitespace for str.split
        ("U.S.A.", "usa"),
        ("$1,000.50", "100050"),
    ],
)
def test_normalize_answer(text, want):
    assert qa_metrics.normalize_answer(text) == want


def test_token_f1_and_exact():
    # gold [denmark, iceland, and, norway], pred [iceland, and, norway]: P=1, R=3/4
    assert qa_metrics.compute_f1("the Denmark, Iceland and Norway", "Iceland and Norway") == (
        pytest.approx(2 * 0.75 / 1.75)
    )
    # multiset overlap: x:1, y:1 -> P = R = 2/3
    assert qa_metrics.compute_f1("x x y", "x y y") == pytest.approx(2 / 3)
    assert qa_metrics.compute_exact("The Norway.", "norway") == 1
    assert qa_metrics.compute_f1("", "") == 1.0 and qa_metrics.compute_f1("", "a word") == 0.0
    assert qa_metrics.compute_f1("the", "") == 1.0  # both normalise to nothing
    # v1.1 has no empty-answer rule
    assert qa_metrics.f1_score_v1("", "") == 0.0
    assert qa_metrics.exact_match_v1("", "") == 1.0


def _dataset(qas):
    return [{"paragraphs": [{"context": "unused", "qas": qas}]}]


def _qa(qid, *answers):
    return {
        "id": qid,
        "question": "?",
        "answers": [{"text": a, "answer_start": 0} for a in answers],
    }


def test_squad_v1_evaluate_by_hand():
    data = _dataset(
        [
            _qa("q1", "Norway", "the Norway"),
            _qa("q2", "Denmark, Iceland and Norway"),
            _qa("q3", "x"),
        ]
    )
    preds = {"q1": "norway.", "q2": "Iceland and Norway"}  # q3 missing -> 0
    out = qa_metrics.squad_v1_evaluate(data, preds)
    assert out == {
        "exact_match": pytest.approx(100 / 3),
        "f1": pytest.approx(100 * (1 + 6 / 7) / 3),
    }


def test_squad_v2_evaluate_by_hand():
    data = _dataset([_qa("a1", "Rollo"), _qa("a2", "King Charles III"), _qa("u1"), _qa("u2")])
    preds = {"a1": "Rollo", "a2": "Charles", "u1": "France", "u2": "Normandy"}
    na = {"a1": 0.5, "a2": -1.0, "u1": 2.0, "u2": -3.0}
    out = qa_metrics.squad_v2_evaluate(data, preds, na, na_prob_thresh=0.0)
    # thresholded per question (EM, F1): a1 (0, 0) predicted null; a2 (0, .5); u1 (1, 1) null;
    # u2 (0, 0). Best-threshold sweep over na in order u2, a2, a1, u1 from 2 (all null):
    # EM 2 -> 1 -> 1 -> 2 -> 1 (best stays 2 at 0.0); F1 2 -> 1 -> 1.5 -> 2.5 (at 0.5) -> 1.5.
    want = {
        "exact": 25.0,
        "f1": 37.5,
        "total": 4,
        "HasAns_exact": 0.0,
        "HasAns_f1": 25.0,
        "HasAns_total": 2,
        "NoAns_exact": 50.0,
        "NoAns_f1": 50.0,
        "NoAns_total": 2,
        "best_exact": 50.0,
        "best_exact_thresh": 0.0,
        "best_f1": 62.5,
        "best_f1_thresh": 0.5,
    }
    assert out == pytest.approx(want)
    # ELECTRA's default threshold -2.75: only u2 is below it
    out = qa_metrics.squad_v2_evaluate(data, preds, na, na_prob_thresh=-2.75)
    assert out["exact"] == pytest.approx(100 * (0 + 0 + 1 + 0) / 4)  # a1 null, a2 0, u1 1, u2 0
    assert out["f1"] == pytest.approx(100 * (0 + 0 + 1 + 0) / 4)
    # without null odds: raw scores, no best_* keys
    out = qa_metrics.squad_v2_evaluate(data, preds)
    assert out["exact"] == 25.0 and out["f1"] == pytest.approx(100 * 1.5 / 4)
    assert "best_f1" not in out


def test_mrqa_evaluate_skips_missing():
    answers = {"m1": ["Rollo", "Rollo the Walker"], "m2": ["x y"], "m3": ["z"]}
    preds = {"m1": "rollo", "m2": "x"}
    out = qa_metrics.mrqa_evaluate(answers, preds)
    assert out == {"exact_match": 50.0, "f1": pytest.approx(100 * (1 + 2 / 3) / 2)}
    out = qa_metrics.mrqa_evaluate(answers, preds, skip_no_answer=False)
    assert out["exact_match"] == pytest.approx(100 / 3)


def test_get_final_text():
    assert qa_metrics.get_final_text("steve smith", "Steve Smith's") == "Steve Smith"
    assert qa_metrics.get_final_text("1895", "(1895-1943).") == "1895"
    assert qa_metrics.get_final_text("muller", "Müller,") == "Müller"
    assert qa_metrics.get_final_text("nothing", "Steve Smith's") == "Steve Smith's"


def _results_for(feature, k, picks, answerable=0.0):
    """A fake head output whose beam holds `picks` [(start, end, start_lp, end_lp)], rest junk."""
    start_idx = np.zeros([k], np.int32)
    start_lp = np.full([k], -50.0, np.float32)
    end_idx = np.zeros([k, k], np.int32)
    end_lp = np.full([k, k], -50.0, np.float32)
    for i, (s, e, slp, elp) in enumerate(picks):
        start_idx[i], start_lp[i] = s, slp
        end_idx[i, 0], end_lp[i, 0] = e, elp
    return {
        "start_top_index": start_idx,
        "start_top_log_probs": start_lp,
        "end_top_index": end_idx,
        "end_top_log_probs": end_lp,
        "answerable_logit": np.float32(answerable),
    }


def test_decode_predictions_filters_and_null_odds():
    tok = ReferenceTokenizer(VOCAB)
    ctx = "Rollo agreed to swear fealty to King Charles III of West Francia in 911."
    words, _ = qa_reader.split_context(ctx)
    ex = qa_reader.QAExample("squad", 0, "q1", None, "Who?", words)
    feats = qa_features.featurize_examples([ex], tok, False, max_seq_length=16, doc_stride=4)
    assert len(feats) >= 3
    f0 = feats[0]
    q_off = f0.tokens.index("[SEP]") + 1
    kf = next(
        f for f in feats if "king" in f.tokens and f.token_is_max_context[f.tokens.index("king")]
    )
    assert kf is not f0
    k_king = kf.tokens.index("king")
    results = {}
    for f in feats:
        picks = []
        if f is f0:
            picks = [
                (0, 0, -0.01, -0.01),  # [CLS]: skipped
                (1, 2, -0.02, -0.02),  # in the question: skipped
                (q_off + 2, q_off, -0.03, -0.03),  # end before start: skipped
                (q_off, q_off + 1, -3.0, -3.0),  # "roll ##o": valid, weaker
            ]
        if f is kf:
            picks = [(k_king, k_king + 1, -0.5, -0.5)]  # "king charles": best valid
        results[f.eid] = _results_for(f, 4, picks, answerable=float(f.doc_span_index) - 1.0)
    preds, null_odds, nbest = qa_metrics.decode_predictions(
        [ex], feats, results, v2=True, n_best_size=3, max_answer_length=30
    )
    assert preds == {"q1": "King Charles"}
    assert null_odds == {"q1": -1.0}  # min answerable logit over windows
    assert [e["text"] for e in nbest["q1"]][:2] == ["King Charles", "Rollo"]
    assert sum(e["probability"] for e in nbest["q1"]) == pytest.approx(1.0)
    # max_answer_length 1 removes the two-token span
    preds, _, _ = qa_metrics.decode_predictions(
        [ex], feats, results, v2=False, n_best_size=3, max_answer_length=1
    )
    assert preds == {"q1": "empty"}  # the original's nonce answer when nothing is valid
    preds, _, _ = qa_metrics.decode_predictions(
        [ex], feats, results, v2=False, n_best_size=3, max_answer_length=2
    )
    assert preds == {"q1": "King Charles"}
