"""The documentation's own checks: links resolve, no tracker talk, generated files current.

Only `test_hparams_doc_*` import the project (and with it TensorFlow, once, in a module fixture);
the rest read markdown files and nothing else.
"""

import ast
import functools
import glob
import importlib.util
import os
import re
import unicodedata
import urllib.parse

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _rel(*paths):
    return [os.path.relpath(p, REPO) for p in paths]


# the files whose local links must resolve
LINKED_FILES = ["README.md", *_rel(*sorted(glob.glob(os.path.join(REPO, "docs", "*.md"))))] + [
    "experiments/README.md",
    "bench/README.md",
]
# the files that must not speak of the tracker, sessions or "today"
REFERENCE_FILES = LINKED_FILES

DEMO_COMMAND = (
    "python3 -m venv .venv && .venv/bin/pip install -e . && .venv/bin/python run_pretraining.py "
    "&& .venv/bin/python run_finetuning.py"
)
TEST_COMMAND = "python3 -m venv .venv && .venv/bin/pip install -q -e '.[test]' && .venv/bin/python -m pytest -q"


def _read(path):
    with open(os.path.join(REPO, path), encoding="utf-8") as f:
        return f.read()


def _prose_lines(text):
    """(line number, line) outside fenced code blocks."""
    fence = None
    for n, line in enumerate(text.split("\n"), 1):
        stripped = line.lstrip()
        marker = re.match(r"(`{3,}|~{3,})", stripped)
        if marker:
            if fence is None:
                fence = marker.group(1)[0] * len(marker.group(1))
            elif stripped.startswith(fence):
                fence = None
            continue
        if fence is None:
            yield n, line


def _without_code_spans(line):
    return re.sub(r"(`+)(.+?)\1", " ", line)


# -- links --------------------------------------------------------------------------------------

LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^()\s>]*(?:\([^()\s]*\)[^()\s>]*)*)>?")
REFERENCE_DEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)")
HTML_LINK = re.compile(r"""<(?:a|img)\b[^>]*?\b(?:href|src)\s*=\s*["']([^"']+)["']""", re.I)


def links(path):
    """(line number, target) of every link in the markdown file `path` (code excluded)."""
    return _links_in(_read(path))


def _links_in(text):
    out = []
    for n, line in _prose_lines(text):
        line = _without_code_spans(line)
        for pattern in (LINK, REFERENCE_DEF, HTML_LINK):
            for m in pattern.finditer(line):
                out.append((n, m.group(1)))
    return out


def slug(heading):
    """GitHub's anchor for a heading's text: markup dropped, lower-cased, punctuation other than
    `-` and `_` removed, each space a `-`."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link: its text
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML
    text = text.replace("`", "").strip().lower()
    kept = []
    for ch in text:
        category = unicodedata.category(ch)
        if ch in "-_ " or category[0] in "LNM":
            kept.append(ch)
    return "".join(kept).replace(" ", "-")


@functools.lru_cache(maxsize=None)  # a file's anchors, parsed once for all its inbound links
def anchors(path):
    """Every anchor of the markdown file `path`: headings under GitHub's rules (a repeated slug
    gets -1, -2, ...), and explicit `<a name=...>` / `id=...`."""
    seen = {}
    out = set()
    text = _read(path)
    for _, line in _prose_lines(text):
        m = re.match(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$", line)
        if m:
            base = slug(m.group(2))
            count = seen.get(base, 0)
            seen[base] = count + 1
            out.add(base if count == 0 else f"{base}-{count}")
        for m in re.finditer(r"""<a\s[^>]*?(?:name|id)\s*=\s*["']([^"']+)["']""", line):
            out.add(m.group(1))
    return out


def broken_links(paths):
    """'file:line: target (why)' for every local link in `paths` that does not resolve."""
    problems = []
    for path in paths:
        for n, target in links(path):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):  # http:, https:, mailto:
                continue
            file_part, _, anchor = target.partition("#")
            file_part = urllib.parse.unquote(file_part)
            if file_part:
                resolved = os.path.normpath(os.path.join(REPO, os.path.dirname(path), file_part))
                if not os.path.exists(resolved):
                    problems.append(f"{path}:{n}: {target} (no such file)")
                    continue
            else:
                resolved = os.path.join(REPO, path)
            if anchor:
                if not resolved.endswith(".md") or not os.path.isfile(resolved):
                    problems.append(f"{path}:{n}: {target} (an anchor into a non-markdown file)")
                elif urllib.parse.unquote(anchor) not in anchors(os.path.relpath(resolved, REPO)):
                    problems.append(f"{path}:{n}: {target} (no heading with that anchor)")
    return problems


def test_every_local_markdown_link_resolves():
    problems = broken_links(LINKED_FILES)
    assert not problems, "links that do not resolve:\n" + "\n".join(problems)


def test_the_link_checker_reads_the_files_it_checks():
    # a checker that found no link would pass vacuously
    for path in LINKED_FILES:
        assert os.path.isfile(os.path.join(REPO, path)), path
    assert all(links(p) for p in ("docs/PERFORMANCE.md", "experiments/README.md"))
    sample = "\n".join([
        "[a](docs/A.md) and ![b](img.png), [c](#anchor \"title\")",
        "`[not](a link)`",
        "```",
        "[not](in code)",
        "```",
        "[d]: ref/target.md",
        '<img src="x.png"> [e](dir/(paren).md)',
    ])  # fmt: skip
    assert [t for _, t in _links_in(sample)] == [
        "docs/A.md", "img.png", "#anchor", "ref/target.md", "dir/(paren).md", "x.png"
    ]  # fmt: skip
    assert slug("Does ELECTRA beat masked LM? (paper Figure 1 / Table 5)") == (
        "does-electra-beat-masked-lm-paper-figure-1--table-5"
    )
    assert slug("In-domain transfer: `transfer.py` (in progress)") == (
        "in-domain-transfer-transferpy-in-progress"
    )


# -- tracker and session talk -------------------------------------------------------------------

# What a reader of the repository cannot see: the tracker's issues and numbers, the sessions that
# did the work, and "today" (whose?). URLs are not scanned (another project's public tracker is a
# fine citation), nor are code spans and blocks.
TRACKER = [
    (re.compile(r"\bissues?\b", re.I), "the tracker's issues"),
    (re.compile(r"(?<![\w&/#])#\d+\b"), "an issue number"),
    (re.compile(r"\bsessions?\b", re.I), "a work session"),
    (re.compile(r"\btoday(?:'s)?\b", re.I), '"today"'),
    (re.compile(r"\bpull requests?\b|\bPRs?\b"), "a pull request"),
]
URL = re.compile(r"https?://\S+")


def tracker_references(paths):
    found = []
    for path in paths:
        for n, line in _prose_lines(_read(path)):
            line = URL.sub(" ", _without_code_spans(line))
            for pattern, what in TRACKER:
                for m in pattern.finditer(line):
                    found.append(f"{path}:{n}: {m.group(0)!r} ({what})")
    return found


def test_no_tracker_session_or_today_references():
    found = tracker_references(REFERENCE_FILES)
    assert not found, (
        "the docs speak to a reader who cannot see the tracker or the sessions; "
        "say what is true of the code instead:\n" + "\n".join(found)
    )


# -- the fault table -----------------------------------------------------------------------------


def test_every_test_the_fault_table_names_exists():
    text = _read("docs/RELIABILITY.md")
    rows = [line for line in text.split("\n") if line.startswith("| ") and "`test_" in line]
    assert rows, "docs/RELIABILITY.md has no fault table naming tests"
    defined = set()
    for path in glob.glob(os.path.join(REPO, "tests", "test_*.py")):
        with open(path, encoding="utf-8") as f:
            defined.update(re.findall(r"^def (test_\w+)\(", f.read(), re.M))
    named = {name for row in rows for name in re.findall(r"`(?:[\w.]+::)?(test_\w+)`", row)}
    missing = sorted(named - defined)
    assert not missing, (
        f"docs/RELIABILITY.md's fault table names tests that do not exist: {missing}"
    )


# -- task.json ----------------------------------------------------------------------------------


def _task_json_keys():
    tree = ast.parse(_read("electra_tf/finetune/custom/spec.py"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "KEYS" for t in node.targets
        ):
            return list(ast.literal_eval(node.value))
    raise AssertionError("electra_tf/finetune/custom/spec.py has no KEYS")


def test_every_task_json_key_is_documented_in_finetuning_md():
    text = _read("docs/FINETUNING.md")
    start = text.find("## Custom tasks (task.json)")
    assert start >= 0, "docs/FINETUNING.md has no 'Custom tasks (task.json)' section"
    section = text[start:]
    end = re.search(r"^## ", section[3:], re.M)
    section = section[: end.start() + 3] if end else section
    missing = [k for k in _task_json_keys() if f"`{k}`" not in section]
    assert not missing, f"task.json keys not documented in docs/FINETUNING.md: {missing}"


# -- the README's shape (checked once the README is rewritten) -------------------------------------

PILOT = re.compile(
    r"\bpilot\b|\b(?:first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|\d+(?:st|nd|rd|th))"
    r"(?: pilot)? rounds?\b",
    re.I,
)


def _line_of(text, needle):
    for n, line in enumerate(text.split("\n"), 1):
        if needle in line:
            return n
    return None


def test_readme_is_at_most_150_lines():
    n = len(_read("README.md").rstrip("\n").split("\n"))
    assert n <= 150, f"README.md has {n} lines (at most 150: the rest belongs in docs/)"


def test_readme_set_up_commands_come_first():
    text = _read("README.md")
    demo, tests = _line_of(text, DEMO_COMMAND), _line_of(text, TEST_COMMAND)
    assert demo is not None and demo <= 40, f"README.md: the demo command is at line {demo}"
    assert tests is not None and tests <= 45, f"README.md: the test command is at line {tests}"


def test_readme_has_no_pilot_round_narrative():
    found = [
        f"README.md:{n}: {m.group(0)!r}"
        for n, line in _prose_lines(_read("README.md"))
        for m in PILOT.finditer(line)
    ]
    assert not found, "pilot rounds belong in experiments/README.md:\n" + "\n".join(found)


# -- docs/HPARAMS.md ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def hparams_doc():
    """scripts/hparams_doc.py, imported once (it imports the config modules, and TensorFlow)."""
    spec = importlib.util.spec_from_file_location(
        "hparams_doc", os.path.join(REPO, "scripts", "hparams_doc.py")
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_hparams_doc_every_hparam_has_help(hparams_doc):
    missing = hparams_doc.missing_help()
    assert not missing, "hparams without help= (add one, then regenerate docs/HPARAMS.md): " + (
        ", ".join(missing)
    )


def test_hparams_doc_is_current(hparams_doc):
    assert _read("docs/HPARAMS.md") == hparams_doc.render(), (
        "docs/HPARAMS.md is stale: python scripts/hparams_doc.py > docs/HPARAMS.md"
    )
