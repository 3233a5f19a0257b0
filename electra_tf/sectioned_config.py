"""The one way a pretraining or fine-tuning config is built and read.

Both jobs keep the original's flat hparam keys (what users' JSON files hold) and group them in
code into frozen sections (`electra_tf.hparams`). A config built from them reads the same way in
both jobs:

  * `Config.from_flat(model_name, data_dir, hparams, explicit=None)` builds it from flat keys
    over the defaults (`explicit`: the keys the user set, default all of `hparams`; only those
    warn when compatibility-only): `debug: true` first applies the job's `DEBUG_PRESET` (the
    user's own values win over it), then every derived value is resolved, once (the job's
    `resolve`: reading a task.json, say), and the config validated; in both jobs
    `deterministic: true` needs `seed` among `hparams` (a default seed is not a choice made
    for determinism);
  * `config.KEY` and `config.SECTION.KEY` are the same value, resolved (a derived default
    filled in); `config.given(KEY)` is the value before that (None: derived);
  * `config.to_flat()` is every flat key with its resolved value, plus the model name and data
    directory (what a run's config.json records);
  * `config.with_hparams(**changes)` is a changed copy, its derived values resolved again (set
    by the program: no warnings);
  * `config.run` is the run directory (`run_dir.RunDirectory`) the job writes in: the pretraining
    run's model directory, or, for fine-tuning, the pretrained model's (its results and kept
    fine-tuned models).

A key that both jobs have means the same in both (a test compares their types and choices); the
keys both accept are defined once, here (`SHARED`), and their sections take them from it.
"""

import copy
import dataclasses
from typing import Any, ClassVar, Dict, Iterable, Literal, Mapping, Optional, Type, Union

from electra_tf import hparams as hp
from electra_tf import run_dir
from electra_tf.hparams import DISTRIBUTIONS, OPTIMIZERS, hparam

# -- the keys both jobs accept, defined once (each job's section subclasses these; a default
# that differs between the jobs is set with `default_of`, keeping the meaning and help) --------


@dataclasses.dataclass(frozen=True)
class SharedGeneral:
    debug: bool = hparam(False, help="the job's debug preset (pretraining: a tiny model, 20 steps)")
    do_train: bool = hparam(
        True, help="false: no training (fine-tuning scores the model as loaded)"
    )
    eval_batch_size: int = hparam(128, help="evaluation batch size")
    save_checkpoints_steps: int = hparam(
        1000, help="steps between checkpoints (a re-run resumes from the newest)"
    )
    log_every_steps: int = hparam(10, help="steps between progress lines (and train summaries)")
    deterministic: bool = hparam(
        False, help="needs seed set: op determinism; a resumed run replays exactly"
    )


@dataclasses.dataclass(frozen=True)
class SharedOptimization:
    train_batch_size: int = hparam(128, help="global batch size (all replicas)")
    weight_decay_rate: float = hparam(0.01, help="decoupled weight decay (not LayerNorm, bias)")
    clip_norm: Optional[float] = hparam(1.0, help="gradient global-norm clip; null: none")
    optimizer: str = hparam("adamw", choices=OPTIMIZERS, help="lamb: layer-wise trust ratio")
    # new (the original's Adam has none): its absence multiplies early updates by up to ~5x
    adam_bias_correction: bool = hparam(False, help="Adam's bias correction of m and v")
    # new: a rare word's row learns only when it is sampled; in fine-tuning, layer-wise decay
    # alone leaves the embedding layer decay^(layers+2) of the rate (0.26 for 4 layers at 0.8)
    embedding_lr_multiplier: float = hparam(
        1.0, help="times the embedding layer's rate (after any layer-wise decay); 0: frozen"
    )


@dataclasses.dataclass(frozen=True)
class SharedScale:
    """The global batch is `train_batch_size`, split over replicas and accumulation
    micro-batches."""

    distribution: str = hparam("auto", choices=DISTRIBUTIONS, help="auto: TPU, else GPUs, else one")
    # all-reduce gradients in this dtype (None: float32): half the bytes on the wire, for
    # bandwidth-bound clusters, at the cost of rounding each gradient to 8 (bf16) or 11 bits
    allreduce_dtype: Optional[str] = hparam(
        None,
        choices=(None, "bfloat16", "float16"),
        help="all-reduce gradients in it; null: float32",
    )
    gradient_accumulation_steps: int = hparam(1, help="micro-batches per global batch")
    # "auto" decides from each job's own measurements (pretraining: a per-device rule, measured
    # for runs of >= 2,000 steps, `train.step_path`; fine-tuning: XLA for trials of >= 300
    # steps, `train.devices.choose_jit_compile`); null, as older configs record it, reads "auto"
    jit_compile: Union[bool, Literal["auto"]] = hparam(
        "auto", help="XLA-compile the step; auto: each job's rule"
    )
    # training steps per tf.function call (one host synchronisation each), as the original's
    # TPU steps per loop; a call also ends at each multiple of log_every_steps and
    # save_checkpoints_steps
    iterations_per_loop: int = hparam(200, help="steps per tf.function call (one host sync)")


def default_of(section: Type, key: str, default: Any) -> Any:
    """The field `key` of a shared section with another default (same type, choices, help)."""
    f = next(f for f in dataclasses.fields(section) if f.name == key)
    m = f.metadata
    return hparam(default, choices=m["choices"], compat=m["compat"], help=m["help"])


class SectionedConfig:
    """Base of `PretrainingConfig` and `FinetuningConfig`: flat keys over frozen sections.

    A subclass is a frozen dataclass with `model_name`, `data_dir` and one field per entry of
    `SECTIONS` (same names), and implements `run_path`, `resolve` (the derived values) and
    `validate`."""

    SECTIONS: ClassVar[Mapping[str, Type]] = {}
    # the flat values `debug: true` sets (the user's own values win over them)
    DEBUG_PRESET: ClassVar[Mapping[str, Any]] = {}

    @classmethod
    def from_flat(
        cls,
        model_name: str,
        data_dir: str,
        hparams: Optional[Mapping[str, Any]] = None,
        explicit: Optional[Iterable[str]] = None,
    ) -> "SectionedConfig":
        """The config for the original's flat hparams (JSON keys) over the defaults; only the
        keys in `explicit` (default: all of `hparams`) warn (compat keys): pass `explicit=()`
        for a config read back from a run's config.json, which records every key."""
        hparams = cls.read_nulls(hparams or {})
        explicit = list(hparams if explicit is None else explicit)
        debug = hparams.get("debug") is True  # another value is from_flat's error
        preset = copy.deepcopy(dict(cls.DEBUG_PRESET)) if debug else {}
        sections = hp.from_flat(cls.SECTIONS, {**preset, **hparams}, explicit=explicit)
        given = {k: v for s in sections.values() for k, v in dataclasses.asdict(s).items()}
        # the default seed serves a run that asks for no determinism; one that does names it
        hp.require_seed(given["deterministic"], hparams.get("seed"))
        config = cls.__new__(cls)
        values = cls.resolve(model_name, data_dir, sections, hparams)
        for name, value in {"model_name": model_name, "data_dir": data_dir, **values}.items():
            object.__setattr__(config, name, value)
        object.__setattr__(config, "_given", given)
        config.validate()
        return config

    @classmethod
    def resolve(
        cls, model_name: str, data_dir: str, sections: Dict[str, Any], hparams: Mapping[str, Any]
    ) -> Dict[str, Any]:
        """The config's fields besides model_name and data_dir: `sections` (as given) with the
        derived values filled in, and any field derived from them."""
        raise NotImplementedError

    def validate(self) -> None:
        """Impossible values and combinations are UserErrors saying why."""

    @classmethod
    def section_of(cls) -> Dict[str, str]:
        """Flat key -> the name of the section holding it."""
        cached = cls.__dict__.get("_section_of_cache")
        if cached is None:
            cached = {
                f.name: name for name, s in cls.SECTIONS.items() for f in dataclasses.fields(s)
            }
            clashes = sorted(set(cached) & set(cls.SECTIONS))
            if clashes:  # `config.KEY` would read the section instead of the key
                raise TypeError(f"{cls.__name__}: flat keys named like sections: {clashes}")
            cls._section_of_cache = cached
        return cached

    @classmethod
    def flat_keys(cls) -> list:
        return list(cls.section_of())

    def __getattr__(self, key: str) -> Any:
        # called only for names that are not attributes: the flat keys of the sections
        section = type(self).section_of().get(key)
        if section is None:
            raise AttributeError(f"{type(self).__name__} has no attribute {key!r}")
        return getattr(object.__getattribute__(self, section), key)

    @staticmethod
    def read_nulls(flat: Mapping[str, Any]) -> Dict[str, Any]:
        """`flat` with the nulls that older configs record for "auto" read as "auto"."""
        flat = dict(flat)
        if "jit_compile" in flat and flat["jit_compile"] is None:
            flat["jit_compile"] = "auto"
        return flat

    def sections_flat(self) -> Dict[str, Any]:
        """Every flat key as given (None where the job derives the value)."""
        return dict(object.__getattribute__(self, "_given"))

    def given(self, key: str) -> Any:
        """The value of flat key `key` as given: None where the job derives it."""
        return object.__getattribute__(self, "_given")[key]

    def to_flat(self) -> Dict[str, Any]:
        """Every flat key with its resolved value, plus model_name and data_dir."""
        d = {key: getattr(self, key) for key in self.flat_keys()}
        d.update(model_name=self.model_name, data_dir=self.data_dir)
        return d

    def with_hparams(self, **changes: Any) -> "SectionedConfig":
        """A copy with some hparams changed, its derived values resolved again (set by the
        program: no compat warnings)."""
        return type(self).from_flat(
            self.model_name, self.data_dir, {**self.sections_flat(), **changes}, explicit=()
        )

    @property
    def run_path(self) -> str:
        raise NotImplementedError

    @property
    def run(self) -> run_dir.RunDirectory:
        """The run directory this job writes in."""
        return run_dir.RunDirectory(self.run_path)
