"""The Hugging Face layout (`save_pretrained`'s): one network and its head as
`ElectraForPreTraining` (--head=discriminator), `ElectraForMaskedLM` (generator) or `ElectraModel`
(encoder), through the name table of `electra_tf.huggingface.names`.

Writes `config.json` (ElectraConfig's keys, `architectures`), `model.safetensors` (float32,
Hugging Face's names and layouts, metadata format "pt"; a tied generator output layer is not
stored, as transformers saves it), `vocab.txt`, `tokenizer_config.json` (ElectraTokenizer,
`do_lower_case`) and `special_tokens_map.json` (without a vocab -- a Hugging Face directory saved
without its tokenizer -- the model files only, as a model's `save_pretrained`). Only the `safetensors` package's numpy API is
used: no torch.
"""

import dataclasses
import os
import shutil
from typing import Dict, Optional

import numpy as np

from electra_tf import run_dir, vocab
from electra_tf.checkpoint import load_model
from electra_tf.errors import UserError
from electra_tf.export.common import check_export_dir
from electra_tf.huggingface import names
from electra_tf.huggingface.config import hf_config
from electra_tf.io_utils import write_json

TOKENIZER_CLASS = "ElectraTokenizer"
HF_SPECIAL = ("unk", "sep", "pad", "cls", "mask")  # the tokenizer's special tokens, all needed


def _by_relative_path(weights) -> Dict[str, object]:
    """An encoder's variables by their path without the network scope ("electra/",
    "generator/"): shared embeddings are `electra/embeddings/*` even in the generator."""
    return {w.path.split("/", 1)[1]: w for w in weights}


def huggingface_tensors(loaded: load_model.Loaded, head: str) -> Dict[str, np.ndarray]:
    """The loaded network of `head` and its head under Hugging Face's names and layouts."""
    nets = loaded.networks
    encoder = nets.generator if head == names.GENERATOR else nets.discriminator
    prefix = "" if head == names.ENCODER else names.HF_NETWORK_PREFIX
    variables = _by_relative_path(encoder.weights)
    projection = encoder.embeddings_project is not None
    out = {}
    for hf_name, original in names.network_pairs(encoder.config.num_hidden_layers, projection):
        out[prefix + hf_name] = names.to_huggingface(original, variables[original].numpy())
    if head != names.ENCODER:
        layer = (
            nets.generator_predictions
            if head == names.GENERATOR
            else nets.discriminator_predictions
        )
        by_path = {w.path: w for w in layer.weights}
        tied = getattr(layer, "tied_output", True)
        for hf_name, original in names.head_pairs(head, tied):
            out[hf_name] = names.to_huggingface(original, by_path[original].numpy())
    return out


def export_huggingface(
    loaded: load_model.Loaded,
    head: str,
    export_dir: str,
    vocab_file: Optional[str],
    do_lower_case: Optional[bool] = None,
) -> list[str]:
    """Writes the Hugging Face directory of `head` (see the module docstring); returns the
    tensor names written."""
    from safetensors.numpy import save_file

    check_export_dir(export_dir)
    nets = loaded.networks
    encoder = nets.generator if head == names.GENERATOR else nets.discriminator
    emb = encoder.embeddings.config
    if head == names.GENERATOR and encoder.config.hidden_act != "gelu":
        raise UserError(
            f"hidden_act {encoder.config.hidden_act!r}: transformers' generator_predictions "
            "applies gelu whatever hidden_act is, so only a gelu generator exports exactly"
        )
    special = {"pad": 0}
    if vocab_file is not None:
        tokens = vocab.read_vocab(vocab_file)
        if len(tokens) > emb.vocab_size:
            raise UserError(
                f"{vocab_file}: {len(tokens)} entries, more than the model's vocab_size "
                f"{emb.vocab_size}"
            )
        special = vocab.special_token_ids(tokens, vocab_file, HF_SPECIAL)
    tied = head != names.GENERATOR or getattr(nets.generator_predictions, "tied_output", True)
    # the encoder's embeddings decide the table sizes (a tied generator uses the discriminator's)
    config = dataclasses.replace(
        encoder.config,
        vocab_size=emb.vocab_size,
        max_position_embeddings=emb.max_position_embeddings,
        type_vocab_size=emb.type_vocab_size,
    )
    hf = hf_config(config, names.ARCHITECTURES[head], emb.embedding_size, tied, special["pad"])
    tensors = huggingface_tensors(loaded, head)
    os.makedirs(export_dir, exist_ok=True)
    save_file(tensors, os.path.join(export_dir, run_dir.HF_WEIGHTS_FILE), {"format": "pt"})
    write_json(os.path.join(export_dir, run_dir.CONFIG_FILE), hf)
    if vocab_file is None:
        return sorted(tensors)
    shutil.copyfile(vocab_file, os.path.join(export_dir, run_dir.VOCAB_FILE))
    lower = loaded.config.do_lower_case if do_lower_case is None else do_lower_case
    special_map = {f"{k}_token": vocab.SPECIAL_TOKENS[k] for k in HF_SPECIAL}
    write_json(
        os.path.join(export_dir, run_dir.HF_TOKENIZER_CONFIG_FILE),
        {
            "tokenizer_class": TOKENIZER_CLASS,
            "do_lower_case": bool(lower),
            "strip_accents": None,  # BERT's: accents are stripped when lower-casing
            "tokenize_chinese_chars": True,
            "model_max_length": emb.max_position_embeddings,
            **special_map,
        },
    )
    write_json(os.path.join(export_dir, run_dir.HF_SPECIAL_TOKENS_FILE), special_map)
    return sorted(tensors)
