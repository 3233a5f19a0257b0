"""The one way a pretraining or fine-tuning config is built and read.

Both jobs keep the original's flat hparam keys (what users' JSON files hold) and group them in
code into frozen sections (`electra_tf.hparams`). A config built from them reads the same way in
both jobs:

  * `Config.from_flat(model_name, data_dir, hparams, explicit=None)` builds it from flat keys
    over the defaults (`explicit`: the keys the user set, default all of `hparams`; only those
    warn when compatibility-only); in both jobs `deterministic: true` needs `seed` among
    `hparams` (a default seed is not a choice made for determinism);
  * `config.KEY` is the value of flat key KEY, resolved (a derived default filled in);
    `config.SECTION.KEY` is the same value where the section holds it resolved, the value as
    given (None for "derive it") where the job derives it on reading;
  * `config.to_flat()` is every flat key with its resolved value, plus the model name and data
    directory (what a run's config.json records);
  * `config.with_hparams(**changes)` is a changed copy (set by the program: no warnings);
  * `config.run` is the run directory (`run_dir.RunDirectory`) the job writes in: the pretraining
    run's model directory, or, for fine-tuning, the pretrained model's (its results and kept
    fine-tuned models).

A key that both jobs have means the same in both (a test compares their types and choices).
"""

import dataclasses
from typing import Any, ClassVar, Dict, Mapping, Type

from electra_tf import run_dir


class SectionedConfig:
    """Base of `PretrainingConfig` and `FinetuningConfig`: flat keys over frozen sections.

    A subclass is a frozen dataclass with `model_name`, `data_dir` and one field per entry of
    `SECTIONS` (same names), and implements `run_path` and the classmethod
    `from_flat(model_name, data_dir, hparams=None, explicit=None)`."""

    SECTIONS: ClassVar[Mapping[str, Type]] = {}

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
        """The flat keys as the sections hold them."""
        out: Dict[str, Any] = {}
        for name in self.SECTIONS:
            out.update(dataclasses.asdict(getattr(self, name)))
        return out

    def to_flat(self) -> Dict[str, Any]:
        """Every flat key with its resolved value, plus model_name and data_dir."""
        d = {key: getattr(self, key) for key in self.flat_keys()}
        d.update(model_name=self.model_name, data_dir=self.data_dir)
        return d

    def with_hparams(self, **changes: Any) -> "SectionedConfig":
        """A copy with some hparams changed (set by the program: no compat warnings)."""
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
