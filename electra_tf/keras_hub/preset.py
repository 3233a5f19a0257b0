"""Reading a keras-hub ElectraBackbone preset (`electra_tf.keras_hub.config`) as an encoder under
the original's names.

Every dataset of model.weights.h5 is found by its layer's `name` attribute and its place inside
the layer (`names.location`), checked against the backbone that config.json describes (every
missing, unexpected or misshapen weight is listed in one error), and converted by the name table;
`electra_tf.huggingface.checkpoint.read_source` hands the result to the same restore path as a
Hugging Face `ElectraModel`. keras-hub's `pooled_dense` has no counterpart in ELECTRA's
discriminator: it is left out, with one warning. Read with h5py (which Keras needs anyway).
"""

import os
from typing import Dict, Tuple

import numpy as np

from electra_tf.errors import UserError, weight_problems
from electra_tf.keras_hub import config as kh
from electra_tf.keras_hub import names
from electra_tf.model_config import ModelConfig

Location = Tuple[str, str, int]


def _array(dataset) -> np.ndarray:
    if dataset.attrs.get("dtype") == "bfloat16":  # how Keras marks bfloat16 weights
        import ml_dtypes

        return np.array(dataset, dtype=ml_dtypes.bfloat16).astype(np.float32)
    return np.array(dataset)


def read_h5(path: str) -> Dict[Location, Tuple[str, np.ndarray]]:
    """Every dataset of a Keras 3 weights file by (layer name, group inside it, index), with
    its h5 path; an unreadable file is an error."""
    import h5py

    found: Dict[Location, Tuple[str, np.ndarray]] = {}
    try:
        with h5py.File(path, "r") as f:
            layers = f.get("layers")
            if not isinstance(layers, h5py.Group):
                raise UserError(f"{path}: no 'layers' group: not a Keras 3 model.weights.h5")
            for key, group in layers.items():
                own = group.get("vars")
                layer = own.attrs.get("name", key) if isinstance(own, h5py.Group) else key

                def visit(rel, obj, key=key, layer=layer):
                    if isinstance(obj, h5py.Dataset):
                        inner, _, index = rel.rpartition("vars/")
                        where = (
                            str(layer),
                            inner.rstrip("/"),
                            int(index) if index.isdigit() else -1,
                        )
                        found[where] = (f"layers/{key}/{rel}", _array(obj))

                group.visititems(visit)
    except (OSError, KeyError, ValueError, RuntimeError) as e:
        raise UserError(
            f"{path}: not a readable HDF5 weights file ({e}); is it complete?"
        ) from None
    return found


def read_preset(directory: str) -> Tuple[ModelConfig, dict, Dict[str, np.ndarray]]:
    """(encoder config, config.json, the encoder's weights under relative original names) of a
    preset; see the module docstring."""
    run = kh.read_run_config(directory)
    d = run.extra[kh.KIND]
    config = run.model_config
    weights = os.path.join(directory, kh.WEIGHTS_FILE)
    if not os.path.exists(weights):
        raise UserError(f"{directory}: a keras-hub preset without {kh.WEIGHTS_FILE}")
    found = read_h5(weights)
    projection = config.embedding_size != config.hidden_size
    pairs = names.network_pairs(config.num_hidden_layers, projection)
    wanted = {names.location(k): k for k, _ in pairs}
    pooler = {names.location(k): k for k in names.POOLER}
    shapes = names.keras_hub_shapes(config)
    missing = sorted(k for loc, k in wanted.items() if loc not in found)
    unexpected = sorted(
        p for loc, (p, _) in found.items() if loc not in wanted and loc not in pooler
    )
    bad = [
        f"{k} is {list(found[loc][1].shape)}, config.json says {list(shapes[k])}"
        for loc, k in sorted(wanted.items(), key=lambda x: x[1])
        if loc in found and tuple(found[loc][1].shape) != shapes[k]
    ]
    problems = weight_problems(missing, unexpected, bad, "weight")
    if problems:
        raise UserError(f"{weights} (read as keras-hub {kh.BACKBONE}): " + "; ".join(problems))
    if any(loc in found for loc in pooler):
        kh.warn_once(
            f"{weights}: keras-hub's pooled_dense (a tanh dense on [CLS]) has no counterpart in "
            "ELECTRA's discriminator: it is not loaded"
        )
    network = {
        original: names.to_original(k, found[names.location(k)][1], config.hidden_size)
        for k, original in pairs
    }
    return config, d, network
