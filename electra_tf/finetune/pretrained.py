"""What fine-tuning takes from the pretrained run: its vocab, checkpoint, model config and model
size, found with `electra_tf.run_dir` (beside the checkpoint, then in the directory above)."""

import os
from typing import Any, Optional

from electra_tf import checkpoints, run_dir
from electra_tf.errors import UserError
from electra_tf.finetune.config import FinetuningConfig
from electra_tf.finetune.model import FinetuningModel
from electra_tf.model_config import MODEL_SIZES, ModelConfig, get_model_config


def log(msg: str) -> None:
    print(msg, flush=True)


def resolve_vocab_file(config: FinetuningConfig) -> str:
    """`vocab_file`, else the pretrained model's vocab.txt, else DATA_DIR/vocab.txt."""
    if config.vocab_file:
        candidates = [config.vocab_file]
    else:
        candidates = [config.run.vocab_path, os.path.join(config.data_dir, run_dir.VOCAB_FILE)]
    for path in candidates:
        if os.path.exists(path):
            return path
    raise UserError(f"no vocab file: tried {', '.join(candidates)}")


def find_init_checkpoint(config: FinetuningConfig) -> Optional[str]:
    """The checkpoint prefix to start from (None with random_init, or where there is none)."""
    return None if config.random_init else run_dir.find_checkpoint(config.init_checkpoint)


def load_model_config(config: FinetuningConfig, checkpoint: Optional[str]) -> ModelConfig:
    """The model config in the config.json beside the checkpoint (a pretraining run's, or a BERT
    JSON), else the size preset."""
    if os.path.isdir(config.init_checkpoint):
        where = config.init_checkpoint
    else:
        # random_init reads the architecture beside the checkpoint it does not load
        ref = checkpoint or (config.init_checkpoint if config.random_init else None)
        where = ref or config.pretrained_model_dir
    found = run_dir.find_beside(where, (run_dir.CONFIG_FILE,))
    if found is not None:
        return run_dir.read_run_config(found).model_config
    shown = where if os.path.isdir(where) or where == config.pretrained_model_dir else None
    shown = shown or os.path.dirname(where)
    log(f"no config.json beside {shown}: using the {config.model_size} preset")
    return get_model_config(
        config.model_size,
        vocab_size=config.vocab_size,
        embedding_size=config.embedding_size,
        overrides=config.model_hparam_overrides,
    )


def pretrained_model_size(
    data_dir: str, model_name: str, init_checkpoint: Optional[str] = None
) -> Optional[str]:
    """The `model_size` the pretraining run recorded in the config.json beside its checkpoint
    (None when there is none): fine-tuning defaults to it, hence to its learning rate."""
    where = init_checkpoint or run_dir.model_dir(data_dir, model_name)
    found = run_dir.find_beside(where, (run_dir.CONFIG_FILE,))
    if found is None:
        return None
    size = run_dir.read_run_config(found).hparams.get("model_size")
    return size if size in MODEL_SIZES else None


def with_pretrained_size(data_dir: str, model_name: str, hparams: dict[str, Any]) -> dict[str, Any]:
    """`hparams` with `model_size` (hence the learning rate) defaulting to the pretraining run's,
    where it recorded one (the command line's default)."""
    if "model_size" in hparams:
        return hparams
    init = hparams.get("init_checkpoint")
    # a value of the wrong type is left for the config to report
    size = pretrained_model_size(data_dir, model_name, init if isinstance(init, str) else None)
    return {**hparams, "model_size": size} if size else hparams


def restore_encoder(model: FinetuningModel, checkpoint: str) -> None:
    """Loads the pretrained discriminator into `model.encoder`: a checkpoint of this project's
    pretraining (object-based) or an original TF1 one (by variable name)."""
    checkpoints.restore_discriminator(model.encoder, checkpoint)
