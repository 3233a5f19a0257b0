"""Writes docs/HPARAMS.md: every hparam of pretraining and fine-tuning, from the typed sections.

    python scripts/hparams_doc.py > docs/HPARAMS.md     # regenerate
    python scripts/hparams_doc.py --check               # exit 1 if docs/HPARAMS.md is stale

The source is the sections themselves (`electra_tf/pretraining_config.py` and
`electra_tf/finetune/config.py`, `SECTIONS`): each field's flat key, its type as
`electra_tf.hparams` names it in errors, its default, its choices and its `help=` text. A field
without help is an error here, so the generated file documents every key.
"""

import dataclasses
import difflib
import json
import os
import sys
import typing

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOC = os.path.join(REPO, "docs", "HPARAMS.md")

HEADER = """\
# Hyperparameters

Every hparam of `run_pretraining.py` and `run_finetuning.py`, by section. They are the original's
flat keys: pass them as `--hparams='{"key": value}'` or `--hparams=FILE.json`. An unknown key, a
value of the wrong type or one outside its choices is one `error:` line naming the key. `null`
means the value is derived (the help says from what). Keys marked *no effect* are accepted because
the original's hparams files have them, and warn once when set. A key that both scripts have sits
in the section of the same name in both and means the same in both (most are defined once, in
`electra_tf/sectioned_config.py`, with other defaults where the original's differ; `seed`,
`learning_rate` and `max_seq_length` also take `null` in fine-tuning; `precision` takes `auto` in
pretraining;
`jit_compile: auto` decides from each job's own measurements: XLA for trials of 300 steps or more
in fine-tuning, a per-device rule, measured for runs of 2,000 steps or more, in pretraining).

This file is generated from the typed sections (`electra_tf/pretraining_config.py`,
`electra_tf/finetune/config.py`) by `python scripts/hparams_doc.py > docs/HPARAMS.md`; do not edit
it by hand (`tests/test_docs.py` checks that it is current). What the keys do in context:
[PRETRAINING.md](PRETRAINING.md) and [FINETUNING.md](FINETUNING.md).
"""

PARTS = (
    ("Pretraining (`run_pretraining.py`)", "electra_tf.pretraining_config"),
    ("Fine-tuning (`run_finetuning.py`)", "electra_tf.finetune.config"),
)


def _sections(module_name: str):
    import importlib

    return importlib.import_module(module_name).SECTIONS


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _default(f: dataclasses.Field):
    if f.default is not dataclasses.MISSING:
        return f.default
    return f.default_factory()


def fields(sections) -> list:
    """(section, field, type name) for every field of `sections`, in order."""
    from electra_tf import hparams

    out = []
    for name, section in sections.items():
        hints = typing.get_type_hints(section)
        for f in dataclasses.fields(section):
            out.append((name, f, hparams._type_name(hints[f.name])))
    return out


def missing_help() -> list:
    """'module: key' for every field without a help text."""
    return [
        f"{module}: {f.name}"
        for _, module in PARTS
        for _, f, _ in fields(_sections(module))
        if not f.metadata.get("help")
    ]


def render() -> str:
    lines = [HEADER]
    for title, module in PARTS:
        lines.append(f"## {title}\n")
        current = None
        for section, f, type_name in fields(_sections(module)):
            if section != current:
                if current is not None:
                    lines.append("")
                lines.append(f"### {section}\n")
                lines.append("| key | type | default | choices | meaning |")
                lines.append("| --- | --- | --- | --- | --- |")
                current = section
            choices = f.metadata.get("choices")
            choice_text = ", ".join(f"`{json.dumps(c)}`" for c in choices) if choices else ""
            meaning = f.metadata.get("help") or ""
            if f.metadata.get("compat"):
                meaning = f"*no effect* ({meaning})" if meaning else "*no effect*"
            lines.append(
                f"| `{f.name}` | {_cell(type_name)} | `{json.dumps(_default(f))}` | "
                f"{_cell(choice_text)} | {_cell(meaning)} |"
            )
        lines.append("")
    return "\n".join(lines)


def main(argv) -> int:
    missing = missing_help()
    if missing:
        print("error: hparams without a help text: " + ", ".join(missing), file=sys.stderr)
        return 1
    text = render()
    if "--check" in argv[1:]:
        with open(DOC, encoding="utf-8") as f:
            current = f.read()
        if current != text:
            diff = difflib.unified_diff(
                current.splitlines(), text.splitlines(), "docs/HPARAMS.md", "generated", lineterm=""
            )
            print("\n".join(list(diff)[:40]), file=sys.stderr)
            print(
                "error: docs/HPARAMS.md is stale: python scripts/hparams_doc.py > docs/HPARAMS.md",
                file=sys.stderr,
            )
            return 1
        return 0
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
