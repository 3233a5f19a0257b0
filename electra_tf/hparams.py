"""Typed hyperparameters: frozen dataclasses per section, read from the original's flat keys.

The original keeps every hparam in one flat namespace (`{"learning_rate": 5e-4, ...}`), and its
users' JSON files use those keys; this project keeps the keys and groups them in code into frozen
dataclass sections. `from_flat` is the one place where a flat dict becomes sections:

  * an unknown key is an error listing the valid keys;
  * a value of the wrong type is an error naming the key and the type it expects (integers are
    accepted for floats, integral floats such as JSON's `1e6` for integers, never a bool for a
    number);
  * a key marked `compat` (accepted only because the original's hparams files have it) warns once
    that it has no effect.

Example:
    >>> @dataclasses.dataclass(frozen=True)
    ... class Optim:
    ...     learning_rate: float = 5e-4
    ...     num_train_steps: int = 1000
    >>> from_flat({"optim": Optim}, {"num_train_steps": 1e3})["optim"].num_train_steps
    1000
"""

import dataclasses
import json
import os
import sys
import types
import typing
from typing import Any, Dict, Iterable, Mapping, Optional, Tuple, Type

from electra_tf.errors import UserError
from electra_tf.io_utils import parse_json

_WARNED: set = set()


def hparam(default: Any, *, choices: Optional[Tuple] = None, compat: bool = False, help: str = ""):
    """A section field. `choices`: the allowed values; `compat`: accepted for the original's files,
    has no effect (warns once when set); `help`: one line shown in error messages."""
    metadata = {"choices": choices, "compat": compat, "help": help}
    if isinstance(default, (dict, list)):
        value = default
        return dataclasses.field(
            default_factory=lambda: json.loads(json.dumps(value)), metadata=metadata
        )
    return dataclasses.field(default=default, metadata=metadata)


def defaults(sections: Mapping[str, Type]) -> Dict[str, Any]:
    """Every flat key with its default value, over all sections."""
    out: Dict[str, Any] = {}
    for section in sections.values():
        for f in dataclasses.fields(section):
            if f.default is not dataclasses.MISSING:
                out[f.name] = f.default
            else:
                out[f.name] = f.default_factory()
    return out


def reject_unknown(hparams: Iterable[str], valid: Iterable[str]) -> None:
    """An unknown hparam is an error listing the valid keys (as the original)."""
    valid = set(valid)
    unknown = sorted(set(hparams) - valid)
    if unknown:
        raise UserError(
            f"unknown hparam(s) {', '.join(unknown)}; valid keys: {', '.join(sorted(valid))}"
        )


def _type_name(annotation: Any) -> str:
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        names = [_type_name(a) for a in typing.get_args(annotation)]
        return " or ".join("null" if n == "NoneType" else n for n in names)
    if origin is typing.Literal:
        return " or ".join(json.dumps(a) for a in typing.get_args(annotation))
    names = {bool: "bool", int: "int", float: "float", str: "str", dict: "object", list: "list"}
    if annotation in names:
        return names[annotation]
    if origin in names:
        return names[origin]
    return getattr(annotation, "__name__", str(annotation))


def _coerce(value: Any, annotation: Any) -> Tuple[bool, Any]:
    """(ok, value) for `value` read as `annotation` (JSON-ish types only)."""
    origin = typing.get_origin(annotation)
    if annotation is Any:
        return True, value
    if annotation is type(None):
        return value is None, value
    if origin in (typing.Union, types.UnionType):
        for arg in typing.get_args(annotation):
            ok, coerced = _coerce(value, arg)
            if ok:
                return True, coerced
        return False, value
    if origin is typing.Literal:
        # `True == 1` in Python: compare types too, so that the literal `true` is not `1`
        for a in typing.get_args(annotation):
            if value == a and type(value) is type(a):
                return True, value
        return False, value
    if annotation is bool:
        return isinstance(value, bool), value
    if annotation is int:
        if isinstance(value, bool):
            return False, value
        if isinstance(value, int):
            return True, value
        if isinstance(value, float) and value.is_integer():
            return True, int(value)
        return False, value
    if annotation is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return False, value
        return True, float(value) if isinstance(value, float) else value
    if annotation is str:
        return isinstance(value, str), value
    if annotation is dict or origin is dict:
        return isinstance(value, dict), value
    if annotation is list or origin is list:
        # a comma-separated string is accepted where the original took one (task_names)
        return isinstance(value, (list, tuple)), list(value) if isinstance(value, tuple) else value
    raise TypeError(f"unsupported hparam annotation {annotation!r}")


def check_value(key: str, value: Any, field: dataclasses.Field, hints: Mapping[str, Any]) -> Any:
    """The value of one hparam, type-checked (and coerced where lossless), else a UserError."""
    annotation = hints[field.name]
    ok, coerced = _coerce(value, annotation)
    if not ok:
        raise UserError(
            f"hparam {key}: expected {_type_name(annotation)}, got {json.dumps(value)} "
            f"({type(value).__name__})"
        )
    choices = field.metadata.get("choices")
    if choices is not None and coerced not in choices:
        raise UserError(f"{key} {coerced!r} is not one of {', '.join(map(str, choices))}")
    return coerced


# the scale-out keys pretraining and fine-tuning share, with one meaning in both
DISTRIBUTIONS = ("auto", "one_device", "mirrored", "multi_worker", "tpu")
PRECISIONS = ("float32", "mixed_bfloat16", "mixed_float16")
OPTIMIZERS = ("adamw", "lamb")  # `electra_tf.optimization.make_optimizer`


def require_seed(deterministic: bool, seed: Optional[int]) -> None:
    """The one rule of pretraining and fine-tuning: `deterministic` needs a `seed` the user set
    (op determinism refuses every unseeded random op, and the dropout seeds derive from it)."""
    if deterministic and seed is None:
        raise UserError('hparam deterministic: true needs a seed: set "seed" (an integer) too')


def require_non_negative(**values: float) -> None:
    """A one-line error for the first of `key=value` that is negative."""
    for key, value in values.items():
        if value < 0:
            raise UserError(f"{key} must be >= 0, got {value}")


def warn_once(message: str) -> None:
    if message not in _WARNED:
        _WARNED.add(message)
        print(f"warning: {message}", file=sys.stderr, flush=True)


def from_flat(
    sections: Mapping[str, Type], flat: Mapping[str, Any], explicit: Iterable[str] = ()
) -> Dict[str, Any]:
    """Builds one frozen instance per section from a flat dict of hparams.

    `flat` holds resolved values (defaults already merged in or not); keys absent from it take
    their defaults. `explicit` names the keys the user set: only those trigger the compat warning.
    """
    fields = {}
    for name, section in sections.items():
        hints = typing.get_type_hints(section)
        for f in dataclasses.fields(section):
            fields[f.name] = (name, f, hints)
    reject_unknown(flat, fields)
    values: Dict[str, Dict[str, Any]] = {name: {} for name in sections}
    for key, value in flat.items():
        name, f, hints = fields[key]
        values[name][key] = check_value(key, value, f, hints)
    for key in explicit:
        if key in fields and fields[key][1].metadata.get("compat"):
            warn_once(
                f"hparam {key} is accepted for compatibility with the original and has "
                "no effect here"
            )
    return {name: section(**values[name]) for name, section in sections.items()}


def parse_hparams(value: Optional[str]) -> Dict[str, Any]:
    """`--hparams`: a JSON object string, or a path to a file holding one. A syntax error names
    the line and column."""
    if not value:
        return {}
    text = value.strip()
    source = "--hparams"
    if not text.startswith("{"):
        if not os.path.exists(text):
            raise UserError(f"--hparams {text!r} is neither a JSON object nor an existing file")
        source = text
        with open(text, encoding="utf-8") as f:
            text = f.read()
    d = parse_json(text, source)
    if not isinstance(d, dict):
        raise UserError(f"{source} must be a JSON object")
    return d
