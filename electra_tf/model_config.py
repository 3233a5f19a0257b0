"""A transformer encoder's configuration (the standard BERT JSON keys) and the size presets."""

import dataclasses
from typing import Any, Dict, Optional

from electra_tf.errors import UserError
from electra_tf.io_utils import read_json, write_json

MODEL_SIZES = {
    # hidden size, number of layers (original util/training_utils.py)
    "small": (256, 12),
    "base": (768, 12),
    "large": (1024, 24),
}
ACTIVATIONS = ("gelu", "relu", "gelu_approximate")
# the keys that fix a network's shape (and its FLOPs), given the vocab
SHAPE_KEYS = (
    "vocab_size",
    "embedding_size",
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "intermediate_size",
)


# BERT uncased's vocab: the size assumed where neither a vocab file nor vocab_size gives one
BERT_VOCAB_SIZE = 30522


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    """A transformer encoder's configuration, with the standard BERT JSON keys.

    `embedding_size` None means `hidden_size` (no projection after the embeddings).

    Example:
        >>> ModelConfig(hidden_size=64, num_attention_heads=1).embedding_size
        64
    """

    vocab_size: int = BERT_VOCAB_SIZE
    embedding_size: Optional[int] = None
    hidden_size: int = 256
    num_hidden_layers: int = 12
    num_attention_heads: int = 4
    intermediate_size: int = 1024
    hidden_act: str = "gelu"
    hidden_dropout_prob: float = 0.1
    attention_probs_dropout_prob: float = 0.1
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    initializer_range: float = 0.02

    def __post_init__(self):
        if self.embedding_size is None:  # frozen: resolved once, here
            object.__setattr__(self, "embedding_size", self.hidden_size)
        if self.hidden_size % self.num_attention_heads:
            raise UserError(
                f"hidden_size {self.hidden_size} is not a multiple of "
                f"num_attention_heads {self.num_attention_heads}"
            )
        if self.hidden_act not in ACTIVATIONS:
            raise UserError(f"hidden_act {self.hidden_act!r} is not one of gelu, relu")

    def to_dict(self) -> Dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: Dict[str, Any], source: str = "model config") -> "ModelConfig":
        valid = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(d) - valid)
        if unknown:
            raise UserError(
                f"{source}: unknown key(s) {', '.join(unknown)}; valid keys: {', '.join(sorted(valid))}"
            )
        return cls(**d)

    @classmethod
    def from_json_file(cls, path: str) -> "ModelConfig":
        """A BERT JSON file (a run's config.json is read by `electra_tf.run_dir`)."""
        return cls.from_dict(read_json(path), source=path)

    def to_json_file(self, path: str) -> None:
        write_json(path, self.to_dict())


def size_embedding_size(model_size: str, embedding_size: Optional[int]) -> Optional[int]:
    """`embedding_size` as given, else the size preset's: 128 for "small" (ELECTRA-Small's, the
    original's), None (the hidden size) for the others. The one rule both jobs apply."""
    if embedding_size is None and model_size == "small":
        return 128
    return embedding_size


def get_model_config(
    model_size: str,
    vocab_size: int = BERT_VOCAB_SIZE,
    embedding_size: Optional[int] = None,
    overrides: Optional[Dict[str, Any]] = None,
) -> ModelConfig:
    """The discriminator's config for a size preset, as the original's `get_bert_config`."""
    if model_size not in MODEL_SIZES:
        raise UserError(f"model_size {model_size!r} is not one of {', '.join(MODEL_SIZES)}")
    hidden, layers = MODEL_SIZES[model_size]
    args: Dict[str, Any] = {"hidden_size": hidden, "num_hidden_layers": layers}
    args["vocab_size"] = vocab_size
    args.update(overrides or {})
    # heads and FFN follow the (possibly overridden) hidden size; explicit overrides still win
    args["num_attention_heads"] = max(1, args["hidden_size"] // 64)
    args["intermediate_size"] = 4 * args["hidden_size"]
    args.update(overrides or {})
    if embedding_size is not None:
        args["embedding_size"] = embedding_size
    return ModelConfig.from_dict(args, source="model_hparam_overrides")


def get_generator_config(
    disc: ModelConfig, hidden_fraction: float, layers_fraction: float = 1.0
) -> ModelConfig:
    """Generator = the discriminator narrowed (same depth by default), as the original."""
    hidden = int(round(disc.hidden_size * hidden_fraction))
    layers = int(round(disc.num_hidden_layers * layers_fraction))
    if hidden < 1 or layers < 1:
        raise UserError(
            f"generator_hidden_size {hidden_fraction} / generator_layers {layers_fraction} give an "
            f"empty generator (hidden {hidden}, layers {layers})"
        )
    return dataclasses.replace(
        disc,
        hidden_size=hidden,
        num_hidden_layers=layers,
        intermediate_size=4 * hidden,
        num_attention_heads=max(1, hidden // 64),
    )


def explicit_generator_config(
    disc: ModelConfig, derived: ModelConfig, overrides: Dict[str, Any], untied_embeddings: bool
) -> ModelConfig:
    """The `generator_config` hparam (`overrides`) over the derived generator config; with tied
    embeddings (`untied_generator_embeddings` false) the embedding shapes must be the
    discriminator's."""
    values = derived.to_dict()
    hidden = overrides.get("hidden_size")
    if isinstance(hidden, int) and hidden > 0:  # widths follow an explicit hidden size
        values.update(intermediate_size=4 * hidden, num_attention_heads=max(1, hidden // 64))
        if untied_embeddings:
            values["embedding_size"] = hidden
    gen = ModelConfig.from_dict({**values, **overrides}, source="generator_config")
    if not untied_embeddings:
        for key in ("vocab_size", "embedding_size", "max_position_embeddings", "type_vocab_size"):
            if getattr(gen, key) != getattr(disc, key):
                raise UserError(
                    f"generator_config {key}={getattr(gen, key)} differs from the "
                    f"discriminator's {getattr(disc, key)}, but the embeddings are tied "
                    "(set untied_generator_embeddings=true)"
                )
    if gen.vocab_size != disc.vocab_size:
        raise UserError(
            f"generator_config vocab_size {gen.vocab_size} differs from the "
            f"discriminator's {disc.vocab_size}"
        )
    return gen
