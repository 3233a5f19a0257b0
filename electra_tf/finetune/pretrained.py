"""What fine-tuning takes from the pretrained run: its vocab, checkpoint, model config and model
size, found with `electra_tf.run_dir` (beside the checkpoint, then in the directory above).

`init_checkpoint` may be a Hugging Face directory (any of ElectraForPreTraining,
ElectraForMaskedLM, ElectraModel: its encoder is loaded; of a "DISC_DIR,GEN_DIR" pair, the
discriminator's): its config.json is the model config, its vocab (vocab.txt, else tokenizer.json)
the default vocab, its tokenizer's lower-casing the default `do_lower_case`, and the size preset
of its hidden size (256 small, 768 base, 1024 large) the default `model_size`. So may a keras-hub
ElectraBackbone preset (its config.json, assets/tokenizer/vocabulary.txt and tokenizer.json's
`lowercase` in the same roles)."""

import os
from typing import Any, Optional

from electra_tf import run_dir, vocab
from electra_tf.checkpoint import locate, restore
from electra_tf.errors import UserError
from electra_tf.finetune.config import FinetuningConfig
from electra_tf.finetune.model import FinetuningModel
from electra_tf.model_config import MODEL_SIZES, ModelConfig, get_model_config
from electra_tf.train.progress import log


def resolve_vocab_file(config: FinetuningConfig) -> str:
    """`vocab_file`, else the pretrained model's vocab.txt, else DATA_DIR/vocab.txt."""
    if config.vocab_file:
        candidates = [config.vocab_file]
    else:
        candidates = [config.run.vocab_path, os.path.join(config.data_dir, run_dir.VOCAB_FILE)]
        if config.given("init_checkpoint") and run_dir.foreign_dirs(config.init_checkpoint):
            beside = locate.vocab_beside(config.init_checkpoint)
            candidates = ([beside] if beside else []) + candidates
    for path in candidates:
        if os.path.exists(path):
            return path
    raise UserError(f"no vocab file: tried {', '.join(candidates)}")


def find_init_checkpoint(config: FinetuningConfig) -> Optional[str]:
    """The checkpoint prefix to start from (None with random_init, or where there is none)."""
    return None if config.random_init else locate.find_checkpoint(config.init_checkpoint)


def load_model_config(config: FinetuningConfig, checkpoint: Optional[str]) -> ModelConfig:
    """The model config in the config.json beside the checkpoint (a pretraining run's, or a BERT
    JSON), else the size preset."""
    if os.path.isdir(config.init_checkpoint):
        where = config.init_checkpoint
    else:
        # random_init reads the architecture beside the checkpoint it does not load
        ref = checkpoint or (config.init_checkpoint if config.random_init else None)
        where = ref or config.pretrained_model_dir
    found = locate.find_beside(where, (run_dir.CONFIG_FILE,))
    if found is not None:
        return locate.read_run_config(found).model_config
    shown = where if os.path.isdir(where) or where == config.pretrained_model_dir else None
    shown = shown or os.path.dirname(where)
    log(f"no config.json beside {shown}: using the {config.model_size} preset")
    return get_model_config(
        config.model_size,
        # as pretraining: null is the vocab file's line count
        vocab_size=config.vocab_size or len(vocab.load_vocab(resolve_vocab_file(config))),
        embedding_size=config.embedding_size,
        overrides=config.model_hparam_overrides,
    )


def pretrained_model_size(
    data_dir: str, model_name: str, init_checkpoint: Optional[str] = None
) -> Optional[str]:
    """The `model_size` the pretraining run recorded in the config.json beside its checkpoint
    (None when there is none): fine-tuning defaults to it, hence to its learning rate."""
    run = _pretrained_config(data_dir, model_name, init_checkpoint)
    if run is None:
        return None
    if run.kind in (run_dir.HUGGINGFACE, run_dir.KERAS_HUB):
        sizes = [
            s for s, (hidden, _) in MODEL_SIZES.items() if hidden == run.model_config.hidden_size
        ]
        return sizes[0] if sizes else None
    size = run.hparams.get("model_size")
    return size if size in MODEL_SIZES else None


def _pretrained_config(data_dir: str, model_name: str, init_checkpoint: Optional[str]):
    where = init_checkpoint or run_dir.model_dir(data_dir, model_name)
    found = locate.find_beside(where, (run_dir.CONFIG_FILE,))
    return None if found is None else locate.read_run_config(found)


def with_pretrained_size(data_dir: str, model_name: str, hparams: dict[str, Any]) -> dict[str, Any]:
    """`hparams` with `model_size` (hence the learning rate) defaulting to the pretraining run's,
    where it recorded one (the command line's default); from a Hugging Face directory, also
    `do_lower_case` defaulting to its tokenizer's."""
    init = hparams.get("init_checkpoint")
    init = init if isinstance(init, str) else None  # a wrong type is left for the config
    if "model_size" not in hparams:
        size = pretrained_model_size(data_dir, model_name, init)
        hparams = {**hparams, "model_size": size} if size else hparams
    if "do_lower_case" not in hparams and init and run_dir.foreign_dirs(init):
        run = _pretrained_config(data_dir, model_name, init)
        if run is not None and "do_lower_case" in run.hparams:
            hparams = {**hparams, "do_lower_case": run.hparams["do_lower_case"]}
    return hparams


def restore_encoder(model: FinetuningModel, checkpoint: str, reinit_top_layers: int = 0) -> None:
    """Loads the pretrained discriminator into `model.encoder`: a checkpoint of this project's
    pretraining (object-based), an original TF1 one (by variable name) or a Hugging Face
    directory. The top `reinit_top_layers` transformer layers keep the values they were built
    with (the model's own initialisers, under the trial's seed)."""
    layers = model.encoder.transformer_layers
    if not 0 <= reinit_top_layers <= len(layers):
        raise UserError(
            f"reinit_top_layers {reinit_top_layers}: the encoder has {len(layers)} layers"
        )
    fresh = layers[len(layers) - reinit_top_layers :]
    values = [[w.numpy() for w in layer.weights] for layer in fresh]
    restore.restore_discriminator(model.encoder, checkpoint)
    for layer, kept in zip(fresh, values):
        for weight, value in zip(layer.weights, kept):
            weight.assign(value)
