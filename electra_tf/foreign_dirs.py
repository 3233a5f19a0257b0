"""Finding the directories of other libraries' layouts that are checkpoints here: Hugging Face
`save_pretrained` directories (one, or a "DISC_DIR,GEN_DIR" pair) and keras-hub ElectraBackbone
presets (`electra_tf.keras_hub.config`), and the names of their files. This module only tells
them apart, reading nothing but their config.json; the adapters (`electra_tf.huggingface`,
`electra_tf.keras_hub`) read what they hold, and `electra_tf.checkpoint.locate` resolves a path
to one of them."""

import os
from typing import Any, List, Optional

from electra_tf import data_layout
from electra_tf.errors import UserError
from electra_tf.io_utils import read_json

CONFIG_FILE = "config.json"
# a Hugging Face directory's files
HF_WEIGHTS_FILE = "model.safetensors"
HF_WEIGHTS_INDEX_FILE = "model.safetensors.index.json"  # sharded weights
HF_PICKLE_FILE = "pytorch_model.bin"  # never loaded: unpickling runs arbitrary code
HF_TOKENIZER_CONFIG_FILE = "tokenizer_config.json"
HF_VOCAB_FILE = data_layout.VOCAB_FILE  # the same name as a data directory's
HF_TOKENIZER_FILE = "tokenizer.json"  # transformers 5 writes it instead of vocab.txt
HF_GENERATOR = "ElectraForMaskedLM"  # the `architectures` of a generator's config.json
HF_SPECIAL_TOKENS_FILE = "special_tokens_map.json"


def is_keras_hub_config(d: Any) -> bool:
    """Whether a config.json's object is a keras-hub object's (and not Hugging Face's)."""
    return (
        isinstance(d, dict)
        and "model_type" not in d
        and (str(d.get("registered_name") or "").startswith("keras_hub>") or "module" in d)
        and "class_name" in d
    )


def is_preset(path: str) -> bool:
    """Whether `path` is a directory whose config.json is a keras-hub object's."""
    config = os.path.join(path, CONFIG_FILE)
    return os.path.isdir(path) and os.path.exists(config) and is_keras_hub_config(read_json(config))


def _is_huggingface_dir(path: str) -> bool:
    config = os.path.join(path, CONFIG_FILE)
    if not (os.path.isdir(path) and os.path.exists(config)):
        return False
    d = read_json(config)
    if not isinstance(d, dict) or "model_type" not in d:
        return False
    weights = (HF_WEIGHTS_FILE, HF_WEIGHTS_INDEX_FILE)
    if any(os.path.exists(os.path.join(path, name)) for name in weights):
        return True
    if os.path.exists(os.path.join(path, HF_PICKLE_FILE)):
        raise UserError(
            f"{path}: holds {HF_PICKLE_FILE}, a pickle, which is never loaded; save it as "
            f"safetensors first (transformers: Model.from_pretrained(DIR).save_pretrained(NEW_DIR) "
            f"writes {HF_WEIGHTS_FILE})"
        )
    raise UserError(f"{path}: a Hugging Face config.json without {HF_WEIGHTS_FILE} beside it")


def huggingface_dirs(path: str) -> Optional[List[str]]:
    """The Hugging Face directories `path` names: one, or two joined by a comma (a
    discriminator's and a generator's: returned in that order when their config.json
    `architectures` say which is the ElectraForMaskedLM); None when it names none. A directory
    with a Hugging Face config.json but only `pytorch_model.bin` is an error."""
    parts = [p.strip() for p in path.split(",")] if "," in path else [path]
    found = [p for p in parts if _is_huggingface_dir(p)]
    if not found:
        return None
    if len(found) != len(parts) or len(parts) > 2:
        raise UserError(
            f"{path}: a comma joins exactly two Hugging Face directories (DISC_DIR,GEN_DIR)"
        )
    generator = [read_json(os.path.join(p, CONFIG_FILE)).get("architectures") for p in found]
    if len(found) == 2 and generator[0] == [HF_GENERATOR] and generator[1] != [HF_GENERATOR]:
        found.reverse()
    return found


def foreign_dirs(path: str) -> Optional[List[str]]:
    """`huggingface_dirs`, or [path] for a keras-hub preset directory."""
    return [path] if is_preset(path) else huggingface_dirs(path)
