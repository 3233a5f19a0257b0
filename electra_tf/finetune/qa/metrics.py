"""Question-answering decoding and scoring.

* `decode_predictions`: ELECTRA's n-best decoding of the joint beam (`start_top_*`, `end_top_*`)
  back to answer text with BERT's `get_final_text` character alignment; for SQuAD 2.0 the null
  score of an example is the minimum answerable logit over its windows.
* `squad_v1_evaluate`, `squad_v2_evaluate`, `mrqa_evaluate`: reimplementations of the official
  SQuAD v1.1 / v2.0 evaluation scripts and the MRQA 2019 script (no download), with the same
  normalisation, token F1, no-answer threshold and best-threshold search, and the same keys.
"""

import collections
import re
import string
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from electra_tf.finetune.qa.features import QAFeature
from electra_tf.finetune.qa.reader import QAExample
from electra_tf.tokenization import BasicTokenizer

# --------------------------------------------------------------------------------------------
# Official SQuAD / MRQA evaluation.

_PUNCTUATION = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)


def normalize_answer(s: str) -> str:
    """Lower-case, drop ASCII punctuation, drop the articles a/an/the, collapse whitespace."""
    s = s.lower()
    s = "".join(ch for ch in s if ch not in _PUNCTUATION)
    s = _ARTICLES.sub(" ", s)
    return " ".join(s.split())


def get_tokens(s: str) -> list[str]:
    return normalize_answer(s).split() if s else []


def compute_exact(a_gold: str, a_pred: str) -> int:
    return int(normalize_answer(a_gold) == normalize_answer(a_pred))


def compute_f1(a_gold: str, a_pred: str) -> float:
    """SQuAD v2.0 token F1 (an empty answer scores 1 only against an empty answer)."""
    gold_toks = get_tokens(a_gold)
    pred_toks = get_tokens(a_pred)
    if not gold_toks or not pred_toks:
        return float(gold_toks == pred_toks)
    return _overlap_f1(pred_toks, gold_toks)


def f1_score_v1(prediction: str, ground_truth: str) -> float:
    """SQuAD v1.1 / MRQA token F1 (no special case for empty strings)."""
    return _overlap_f1(normalize_answer(prediction).split(), normalize_answer(ground_truth).split())


def _overlap_f1(pred_toks: list, gold_toks: list) -> float:
    """F1 of the bag-of-tokens overlap, as both official scripts compute it."""
    num_same = sum((collections.Counter(pred_toks) & collections.Counter(gold_toks)).values())
    if num_same == 0:
        return 0.0
    precision = num_same / len(pred_toks)
    recall = num_same / len(gold_toks)
    return 2 * precision * recall / (precision + recall)


def exact_match_v1(prediction: str, ground_truth: str) -> float:
    return float(normalize_answer(prediction) == normalize_answer(ground_truth))


def squad_v1_evaluate(dataset: Sequence[Mapping[str, Any]], predictions: Mapping[str, str]):
    """Official SQuAD v1.1: {"exact_match", "f1"} (×100); a missing prediction scores 0."""
    f1 = exact_match = 0.0
    total = 0
    for article in dataset:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                total += 1
                if qa["id"] not in predictions:
                    continue
                golds = [a["text"] for a in qa["answers"]]
                if not golds:
                    continue
                pred = predictions[qa["id"]]
                exact_match += max(exact_match_v1(pred, g) for g in golds)
                f1 += max(f1_score_v1(pred, g) for g in golds)
    total = max(total, 1)
    return {"exact_match": 100.0 * exact_match / total, "f1": 100.0 * f1 / total}


def mrqa_evaluate(
    answers: Mapping[str, Sequence[str]],
    predictions: Mapping[str, str],
    skip_no_answer: bool = True,
):
    """Official MRQA 2019: {"exact_match", "f1"}; with `skip_no_answer` missing ids are skipped."""
    f1 = exact_match = 0.0
    total = 0
    for qid, golds in answers.items():
        if qid not in predictions:
            if not skip_no_answer:
                total += 1
            continue
        total += 1
        pred = predictions[qid]
        exact_match += max(exact_match_v1(pred, g) for g in golds)
        f1 += max(f1_score_v1(pred, g) for g in golds)
    total = max(total, 1)
    return {"exact_match": 100.0 * exact_match / total, "f1": 100.0 * f1 / total}


def _v2_raw_scores(dataset, preds):
    exact, f1 = {}, {}
    for article in dataset:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                qid = qa["id"]
                golds = [a["text"] for a in qa["answers"] if normalize_answer(a["text"])]
                if not golds:
                    golds = [""]
                if qid not in preds:
                    continue
                exact[qid] = max(compute_exact(a, preds[qid]) for a in golds)
                f1[qid] = max(compute_f1(a, preds[qid]) for a in golds)
    return exact, f1


def _apply_no_ans_threshold(scores, na_probs, qid_to_has_ans, thresh):
    return {
        qid: (float(not qid_to_has_ans[qid]) if na_probs[qid] > thresh else s)
        for qid, s in scores.items()
    }


def _eval_dict(exact, f1, qid_list=None):
    qids = list(exact) if not qid_list else qid_list
    total = len(qids)
    return collections.OrderedDict(
        [
            ("exact", 100.0 * sum(exact[k] for k in qids) / total),
            ("f1", 100.0 * sum(f1[k] for k in qids) / total),
            ("total", total),
        ]
    )


def _find_best_thresh(preds, scores, na_probs, qid_to_has_ans):
    cur_score = sum(1 for k in qid_to_has_ans if not qid_to_has_ans[k])
    best_score = cur_score
    best_thresh = 0.0
    for qid in sorted(na_probs, key=lambda k: na_probs[k]):
        if qid not in scores:
            continue
        if qid_to_has_ans[qid]:
            diff = scores[qid]
        else:
            diff = -1 if preds[qid] else 0
        cur_score += diff
        if cur_score > best_score:
            best_score = cur_score
            best_thresh = na_probs[qid]
    return 100.0 * best_score / len(scores), best_thresh


def squad_v2_evaluate(
    dataset: Sequence[Mapping[str, Any]],
    preds: Mapping[str, str],
    na_probs: Mapping[str, float] | None = None,
    na_prob_thresh: float = 1.0,
) -> dict[str, float]:
    """Official SQuAD v2.0 (as modified by ELECTRA: `na_prob_thresh` is `qa_na_threshold`).

    A question is predicted unanswerable when `na_probs[qid] > na_prob_thresh`. The best-threshold
    search (`best_*`) runs only when `na_probs` is given, as in the official script.
    """
    qid_to_has_ans = {
        qa["id"]: bool(qa["answers"])
        for article in dataset
        for paragraph in article["paragraphs"]
        for qa in paragraph["qas"]
    }
    has_ans = [k for k, v in qid_to_has_ans.items() if v]
    no_ans = [k for k, v in qid_to_has_ans.items() if not v]
    have_na_probs = na_probs is not None
    if not have_na_probs:
        na_probs = {k: 0.0 for k in preds}
    exact_raw, f1_raw = _v2_raw_scores(dataset, preds)
    exact_t = _apply_no_ans_threshold(exact_raw, na_probs, qid_to_has_ans, na_prob_thresh)
    f1_t = _apply_no_ans_threshold(f1_raw, na_probs, qid_to_has_ans, na_prob_thresh)
    out = _eval_dict(exact_t, f1_t)
    if has_ans:
        for k, v in _eval_dict(exact_t, f1_t, has_ans).items():
            out["HasAns_" + k] = v
    if no_ans:
        for k, v in _eval_dict(exact_t, f1_t, no_ans).items():
            out["NoAns_" + k] = v
    if have_na_probs:
        out["best_exact"], out["best_exact_thresh"] = _find_best_thresh(
            preds, exact_raw, na_probs, qid_to_has_ans
        )
        out["best_f1"], out["best_f1_thresh"] = _find_best_thresh(
            preds, f1_raw, na_probs, qid_to_has_ans
        )
    return dict(out)


# --------------------------------------------------------------------------------------------
# Decoding.


def get_final_text(pred_text: str, orig_text: str, do_lower_case: bool = True) -> str:
    """Projects normalised `pred_text` back onto the original words `orig_text` (BERT's heuristic).

    `orig_text` is BasicTokenizer'd and both strings are stripped of spaces; if they have equal
    length the characters are assumed aligned one to one and the matching slice of `orig_text` is
    returned, otherwise `orig_text` itself.
    """

    def strip_spaces(text):
        ns_chars = []
        ns_to_s_map = {}
        for i, c in enumerate(text):
            if c == " ":
                continue
            ns_to_s_map[len(ns_chars)] = i
            ns_chars.append(c)
        return "".join(ns_chars), ns_to_s_map

    tok_text = " ".join(BasicTokenizer(do_lower_case=do_lower_case).tokenize(orig_text))
    start_position = tok_text.find(pred_text)
    if start_position == -1:
        return orig_text
    end_position = start_position + len(pred_text) - 1
    orig_ns_text, orig_ns_to_s_map = strip_spaces(orig_text)
    tok_ns_text, tok_ns_to_s_map = strip_spaces(tok_text)
    if len(orig_ns_text) != len(tok_ns_text):
        return orig_text
    tok_s_to_ns_map = {tok_index: i for i, tok_index in tok_ns_to_s_map.items()}
    orig_start = orig_ns_to_s_map.get(tok_s_to_ns_map.get(start_position, -1))
    if orig_start is None:
        return orig_text
    orig_end = orig_ns_to_s_map.get(tok_s_to_ns_map.get(end_position, -1))
    if orig_end is None:
        return orig_text
    return orig_text[orig_start : orig_end + 1]


def _softmax(scores: Sequence[float]) -> list[float]:
    if not scores:
        return []
    x = np.exp(np.asarray(scores, np.float64) - max(scores))
    return list(x / x.sum())


def feature_text(
    feature: QAFeature, example: QAExample, start: int, end: int, do_lower_case: bool
) -> str:
    """The answer text of sub-token span [start, end] of a window, via `get_final_text`."""
    tok_text = " ".join(feature.tokens[start : end + 1])
    tok_text = tok_text.replace(" ##", "").replace("##", "")
    tok_text = " ".join(tok_text.strip().split())
    orig_start = feature.token_to_orig_map[start]
    orig_end = feature.token_to_orig_map[end]
    orig_text = " ".join(example.doc_tokens[orig_start : orig_end + 1])
    return get_final_text(tok_text, orig_text, do_lower_case)


def decode_predictions(
    examples: Sequence[QAExample],
    features: Sequence[QAFeature],
    results: Mapping[int, Mapping[str, np.ndarray]],
    v2: bool,
    n_best_size: int = 20,
    max_answer_length: int = 30,
    do_lower_case: bool = True,
    answerable_classifier: bool = True,
) -> tuple[dict[str, str], dict[str, float], dict[str, list[dict[str, Any]]]]:
    """Turns per-window head outputs into answers, null odds (v2) and n-best lists.

    `results[eid]` holds one window's `start_top_log_probs [K]`, `start_top_index [K]`,
    `end_top_log_probs [K, K]`, `end_top_index [K, K]`, `answerable_logit []` (and
    `start_logits`/`end_logits [L]` when `answerable_classifier` is off). A candidate (i, j) is
    skipped if it starts at [CLS], leaves the document, starts at a token whose max-context window
    is another one, ends before it starts, or is longer than `max_answer_length`; the score is
    `start_top_log_probs[i] + end_top_log_probs[i, j]`. The v2 prediction is always the best
    non-empty text, and the null odds are the minimum answerable logit over the windows.
    """
    by_example: dict[int, list[QAFeature]] = collections.defaultdict(list)
    for f in features:
        by_example[f.example_index].append(f)
    predictions: dict[str, str] = collections.OrderedDict()
    null_odds: dict[str, float] = collections.OrderedDict()
    all_nbest: dict[str, list[dict[str, Any]]] = collections.OrderedDict()
    for example_index, example in enumerate(examples):
        prelim = []  # (score, feature position, start, end, start_logit, end_logit)
        score_null = 1000000.0
        ex_features = by_example.get(example_index, [])
        for fi, feature in enumerate(ex_features):
            r = results[feature.eid]
            if v2:
                if answerable_classifier:
                    null = float(r["answerable_logit"])
                else:
                    null = float(r["start_logits"][0] + r["end_logits"][0])
                score_null = min(score_null, null)
            n_tokens = len(feature.tokens)
            for i, start in enumerate(np.asarray(r["start_top_index"]).tolist()):
                for j, end in enumerate(np.asarray(r["end_top_index"][i]).tolist()):
                    if start >= n_tokens or end >= n_tokens or start == 0:
                        continue
                    if start not in feature.token_to_orig_map:
                        continue
                    if end not in feature.token_to_orig_map:
                        continue
                    if not feature.token_is_max_context.get(start, False):
                        continue
                    if end < start or end - start + 1 > max_answer_length:
                        continue
                    s_logit = float(r["start_top_log_probs"][i])
                    e_logit = float(r["end_top_log_probs"][i][j])
                    prelim.append((s_logit + e_logit, fi, start, end, s_logit, e_logit))
        prelim.sort(key=lambda x: x[0], reverse=True)
        nbest = []
        seen = set()
        for _, fi, start, end, s_logit, e_logit in prelim:
            if len(nbest) >= n_best_size:
                break
            text = feature_text(ex_features[fi], example, start, end, do_lower_case)
            if text in seen:
                continue
            seen.add(text)
            nbest.append({"text": text, "start_logit": s_logit, "end_logit": e_logit})
        if not nbest:
            nbest.append({"text": "empty", "start_logit": 0.0, "end_logit": 0.0})
        probs = _softmax([e["start_logit"] + e["end_logit"] for e in nbest])
        for e, p in zip(nbest, probs):
            e["probability"] = float(p)
        best_non_null = next((e for e in nbest if e["text"]), nbest[0])
        qid = example.example_id
        if v2:
            if answerable_classifier:
                null_odds[qid] = float(score_null)
            else:
                null_odds[qid] = float(
                    score_null - best_non_null["start_logit"] - best_non_null["end_logit"]
                )
            predictions[qid] = best_non_null["text"]
        else:
            predictions[qid] = nbest[0]["text"]
        all_nbest[qid] = nbest
    return predictions, null_odds, all_nbest
