"""SQuAD / MRQA reading and featurisation: answers survive the sliding windows exactly."""

import json
import os

import pytest

from electra_tf.errors import UserError
from electra_tf.finetune.qa import features as qa_features
from electra_tf.finetune.qa import metrics as qa_metrics
from electra_tf.finetune.qa import reader as qa_reader
from electra_tf.tokenization import ReferenceTokenizer

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "tests", "data", "qa")
VOCAB = os.path.join(ROOT, "data", "vocab", "vocab.txt")


@pytest.fixture(scope="module")
def tokenizer():
    return ReferenceTokenizer(VOCAB, do_lower_case=True)


def _gold(path):
    with open(path, encoding="utf-8") as f:
        data = json.load(f)["data"]
    return {
        qa["id"]: qa["answers"][0]["text"] if qa["answers"] else ""
        for a in data
        for p in a["paragraphs"]
        for qa in p["qas"]
    }


def test_split_context_whitespace_and_offsets():
    text = "Café\u202fMüller  is\ta\npiece."
    words, offsets = qa_reader.split_context(text)
    assert words == ["Café", "Müller", "is", "a", "piece."]
    assert len(offsets) == len(text)
    assert offsets[text.index("M")] == 1
    assert offsets[text.index("is")] == 2
    assert offsets[text.index("piece")] == 4
    # whitespace characters belong to the preceding word
    assert offsets[text.index("\t")] == 2


def test_read_squad_v2_train(tokenizer):
    path = os.path.join(DATA, "squad_v2_train.json")
    examples = qa_reader.read_squad_examples(path, "train", "squad", v2=True)
    assert len(examples) == 21
    assert [e.eid for e in examples] == list(range(21))
    impossible = [e.qas_id for e in examples if e.is_impossible]
    assert impossible == ["n12", "c9"]
    n4 = next(e for e in examples if e.qas_id == "n4")
    assert n4.doc_tokens[n4.start_position] == "Rollo,"
    assert n4.start_position == n4.end_position
    # dev split: no answers parsed
    dev = qa_reader.read_squad_examples(path, "dev", "squad", v2=True)
    assert all(e.start_position is None and not e.is_impossible for e in dev)


@pytest.mark.parametrize("max_seq_length,doc_stride", [(32, 8), (48, 16), (384, 128)])
def test_featurize_round_trip_across_windows(tokenizer, max_seq_length, doc_stride):
    path = os.path.join(DATA, "squad_v2_train.json")
    examples = qa_reader.read_squad_examples(path, "train", "squad", v2=True)
    features = qa_features.featurize_examples(
        examples, tokenizer, True, max_seq_length=max_seq_length, doc_stride=doc_stride
    )
    by_example = {}
    for f in features:
        by_example.setdefault(f.example_index, []).append(f)
        assert len(f.input_ids) == len(f.input_mask) == len(f.segment_ids) == max_seq_length
        assert f.eid == 1000 * f.example_index + f.doc_span_index
        n = len(f.tokens)
        assert f.tokens[0] == "[CLS]" and f.tokens[-1] == "[SEP]"
        assert sum(f.input_mask) == n
        q_len = f.tokens.index("[SEP]") - 1
        assert q_len <= 64
        assert f.segment_ids[: q_len + 2] == [0] * (q_len + 2)
        assert f.segment_ids[q_len + 2 : n] == [1] * (n - q_len - 2)
        assert f.input_ids[:n] == tokenizer.convert_tokens_to_ids(f.tokens)
    if max_seq_length == 32:
        assert max(len(v) for v in by_example.values()) >= 5  # several windows really exist
    for index, ex in enumerate(examples):
        feats = by_example[index]
        assert [f.doc_span_index for f in feats] == list(range(len(feats)))
        hits = [f for f in feats if f.start_position > 0]
        if ex.is_impossible:
            assert not hits
            assert all(f.is_impossible and f.start_position == f.end_position == 0 for f in feats)
            continue
        assert hits, ex.qas_id
        # windows without the answer target [CLS] and stay "answerable"
        assert all(not f.is_impossible for f in feats)
        want = " ".join(qa_reader.split_context(ex.orig_answer_text)[0])
        for f in hits:
            got = qa_metrics.feature_text(f, ex, f.start_position, f.end_position, True)
            assert got == want, (ex.qas_id, got, want)


def test_windows_and_max_context(tokenizer):
    words = " ".join(f"w{i}" for i in range(30))  # each word -> 'w' '##N': 60 sub-tokens
    ex = qa_reader.QAExample("squad", 0, "x", None, "q", words.split())
    cache = qa_features.SubTokenCache(tokenizer)
    feats = qa_features.featurize_example(
        ex, 0, cache, tokenizer.convert_tokens_to_ids, False, max_seq_length=24, doc_stride=8
    )
    q = len(tokenizer.tokenize("q"))
    span = 24 - q - 3
    n_sub = len([t for w in words.split() for t in tokenizer.tokenize(w)])
    starts = list(range(0, n_sub - span, 8)) + [((n_sub - span + 7) // 8) * 8]
    assert [len(f.tokens) - q - 3 for f in feats] == [span] * (len(starts) - 1) + [
        n_sub - starts[-1]
    ]
    # each sub-token is max-context in exactly one window
    counts = {}
    for f in feats:
        offset = q + 2
        for pos, is_max in f.token_is_max_context.items():
            tok_index = starts[f.doc_span_index] + pos - offset
            counts[tok_index] = counts.get(tok_index, 0) + int(is_max)
    assert sorted(counts) == list(range(n_sub)) and set(counts.values()) == {1}
    # the rule by hand: token 10 sits in windows starting 0 (left 10, right 2) and 8 (2, 10) ->
    # tie on min, then 0.01 * length decides; both spans full -> first one wins
    spans = [(s, min(span, n_sub - s)) for s in starts]
    assert qa_features.check_is_max_context(spans, 0, 6) and not qa_features.check_is_max_context(
        spans, 1, 6
    )


def test_improve_answer_span(tokenizer):
    doc = tokenizer.tokenize("The leader was John Smith (1895-1943).")
    start, end = doc.index("("), len(doc) - 1
    s, e = qa_features.improve_answer_span(doc, start, end, tokenizer.tokenize("1895"))
    assert doc[s : e + 1] == ["1895"]
    # no better match: unchanged
    assert qa_features.improve_answer_span(doc, 0, 1, ["zzz"]) == (0, 1)


def test_query_truncated_to_max_query_length(tokenizer):
    ex = qa_reader.QAExample("squad", 0, "x", None, " ".join(["word"] * 100), ["a", "b"])
    (f,) = qa_features.featurize_examples([ex], tokenizer, False, max_seq_length=128)
    assert f.tokens.index("[SEP]") == 65


def test_squad_v1_and_mrqa_reading(tokenizer):
    v1 = qa_reader.read_squad_examples(
        os.path.join(DATA, "squad_v1_train.json"), "train", "squadv1", v2=False
    )
    mrqa = qa_reader.read_mrqa_examples(os.path.join(DATA, "mrqa_train.jsonl"), "train", "newsqa")
    assert len(v1) == len(mrqa) == 19
    for a, b in zip(v1, mrqa):
        assert (a.start_position, a.end_position) == (b.start_position, b.end_position)
        assert b.example_id == "m" + a.example_id and not b.is_impossible


def test_answer_not_found_is_dropped(tmp_path):
    data = {
        "data": [
            {
                "paragraphs": [
                    {
                        "context": "Alpha beta gamma.",
                        "qas": [
                            {
                                "id": "a",
                                "question": "?",
                                "answers": [{"text": "delta", "answer_start": 6}],
                            },
                            {
                                "id": "b",
                                "question": "?",
                                "answers": [{"text": "beta", "answer_start": 6}],
                            },
                            {
                                "id": "c",
                                "question": "?",
                                "answers": [{"text": "gamma.", "answer_start": 40}],
                            },
                        ],
                    }
                ]
            }
        ]
    }
    path = tmp_path / "train.json"
    path.write_text(json.dumps(data))
    examples = qa_reader.read_squad_examples(str(path), "train", "squadv1", v2=False)
    assert [e.qas_id for e in examples] == ["b"] and examples[0].eid == 0


def test_malformed_files_name_the_place():
    with pytest.raises(UserError, match=r"bad_json.json: not valid JSON \(line 3"):
        qa_reader.read_squad_examples(os.path.join(DATA, "bad_json.json"), "dev", "squad", True)
    with pytest.raises(
        UserError, match=r"data\[0\]\.paragraphs\[0\]\.qas\[0\]: missing key 'question'"
    ):
        qa_reader.read_squad_examples(
            os.path.join(DATA, "missing_question.json"), "dev", "squad", True
        )
    with pytest.raises(UserError, match=r"bad_line.jsonl: line 3: not valid JSON"):
        qa_reader.read_mrqa_examples(os.path.join(DATA, "bad_line.jsonl"), "dev", "newsqa")
    with pytest.raises(UserError, match="file not found"):
        qa_reader.read_squad_examples(os.path.join(DATA, "nope.json"), "dev", "squad", True)
    with pytest.raises(UserError, match="missing key 'is_impossible'"):
        qa_reader.read_squad_examples(
            os.path.join(DATA, "squad_v1_train.json"), "train", "squad", v2=True
        )
