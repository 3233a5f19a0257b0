"""Makes small Hugging Face ELECTRA directories with `transformers`' own `save_pretrained`, and
what `transformers` computes with them: the kind of input a user (or a held-back check) brings.

Runs in the Hugging Face peer's environment (torch + transformers), never in the project's, from
the repository root (so that `electra_tf.data_layout`, which needs nothing, imports there):

    /work/venv-bench/bin/python -m scripts.make_hf_checkpoints --out DIR [--vocab VOCAB.txt]

Writes, for each model below, `DIR/NAME/` (config.json, model.safetensors and the tokenizer files
of `ElectraTokenizer(VOCAB).save_pretrained`) and `DIR/NAME.npz` (input_ids, attention_mask,
token_type_ids int32 [4, 24] -- tokenized sentences and random ids, with padding -- and the model's
`logits` and `last_hidden_state` in eval mode, float32), and `DIR/models.json` (name -> class,
config). Every parameter is its random init plus N(0, 0.02) noise, so that LayerNorm weights and
biases are not 1 and 0. Models (vocab = VOCAB's size, max_position_embeddings 64):

    disc_proj      ElectraForPreTraining  E 16, H 32, 2 layers, 2 heads, FFN 64 (embeddings_project)
    disc_noproj    ElectraForPreTraining  E 32, H 32, 2 layers, hidden_act gelu_new, uncased=False
    gen_tied       ElectraForMaskedLM     E 16, H 16, 2 layers, 1 head, FFN 64, tied output layer
    gen_untied     ElectraForMaskedLM     the same with tie_word_embeddings false
    gen_shared     ElectraForMaskedLM     gen_tied's shape with disc_proj's embeddings (a pair
                                          that shares its embeddings, as the original trains)
    encoder        ElectraModel           E 16, H 32, 3 layers, 4 heads, relu
    disc_bare      ElectraForPreTraining  vocab 1000, E 24, H 48, 3 heads, FFN 96, 40 positions;
                                          the model alone is saved (no tokenizer files), its
                                          inputs are random ids
"""

import argparse
import json
import os

import numpy as np
import torch
from transformers import (
    ElectraConfig,
    ElectraForMaskedLM,
    ElectraForPreTraining,
    ElectraModel,
    ElectraTokenizer,
)

from electra_tf import data_layout  # no dependencies: imports in the peer's environment

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SENTENCES = [
    ("The quick brown fox jumps over the lazy dog.", None),
    ("ELECTRA trains a discriminator.", "It detects replaced tokens!"),
]
LENGTH = 24


def configs(vocab_size: int) -> dict:
    base = dict(vocab_size=vocab_size, max_position_embeddings=64, num_hidden_layers=2)
    disc = dict(
        base, embedding_size=16, hidden_size=32, num_attention_heads=2, intermediate_size=64
    )
    gen = dict(base, embedding_size=16, hidden_size=16, num_attention_heads=1, intermediate_size=64)
    return {
        "disc_proj": (ElectraForPreTraining, disc, True),
        "disc_noproj": (
            ElectraForPreTraining,
            dict(disc, embedding_size=32, hidden_act="gelu_new"),
            False,
        ),
        "gen_tied": (ElectraForMaskedLM, gen, True),
        "gen_untied": (ElectraForMaskedLM, dict(gen, tie_word_embeddings=False), True),
        "gen_shared": (ElectraForMaskedLM, gen, True),
        "encoder": (
            ElectraModel,
            dict(disc, num_hidden_layers=3, num_attention_heads=4, hidden_act="relu"),
            True,
        ),
        "disc_bare": (
            ElectraForPreTraining,
            dict(
                vocab_size=1000,
                embedding_size=24,
                hidden_size=48,
                num_hidden_layers=2,
                num_attention_heads=3,
                intermediate_size=96,
                max_position_embeddings=40,
            ),
            None,
        ),
    }


def inputs(tokenizer, vocab_size: int, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    ids = np.zeros([4, LENGTH], np.int32)
    mask = np.zeros_like(ids)
    types = np.zeros_like(ids)
    if tokenizer is None:  # random ids in every row, one full, the others padded
        for row, n in enumerate((LENGTH, 7, 15, 20)):
            ids[row, :n] = rng.integers(1, vocab_size, n)
            mask[row, :n] = 1
            types[row, n // 2 : n] = 1
        return {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
    for row, (a, b) in enumerate(SENTENCES):
        enc = tokenizer(a, b, truncation=True, max_length=LENGTH)
        n = len(enc["input_ids"])
        ids[row, :n], mask[row, :n] = enc["input_ids"], 1
        types[row, :n] = enc["token_type_ids"]
    for row, n in ((2, LENGTH), (3, 11)):  # random ids, one row full, one padded
        ids[row, :n] = rng.integers(1000, vocab_size, n)
        ids[row, 0], ids[row, n - 1] = tokenizer.cls_token_id, tokenizer.sep_token_id
        mask[row, :n] = 1
        types[row, n // 2 : n] = 1
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}


def perturb(model, seed: int) -> None:
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn(p.shape, generator=g) * 0.02)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    p.add_argument("--vocab", default=data_layout.vocab_file(os.path.join(REPO, "data", "vocab")))
    args = p.parse_args()
    os.makedirs(args.out, exist_ok=True)
    torch.manual_seed(0)
    vocab_size = sum(1 for _ in open(args.vocab, encoding="utf-8"))
    made, disc_proj = {}, None
    for seed, (name, (cls, kwargs, lower)) in enumerate(configs(vocab_size).items()):
        tokenizer = None if lower is None else ElectraTokenizer(args.vocab, do_lower_case=lower)
        model = cls(ElectraConfig(**kwargs)).eval()
        perturb(model, seed)
        if name == "gen_shared":  # the discriminator's whole embeddings module
            model.electra.embeddings.load_state_dict(disc_proj.electra.embeddings.state_dict())
        if name == "disc_proj":
            disc_proj = model
        directory = os.path.join(args.out, name)
        model.save_pretrained(directory)
        if tokenizer is not None:
            tokenizer.save_pretrained(directory)
        feed = inputs(tokenizer, kwargs["vocab_size"])
        with torch.no_grad():
            t = {k: torch.from_numpy(v.astype(np.int64)) for k, v in feed.items()}
            if cls is ElectraModel:
                out = model(**t)
                logits = out.last_hidden_state
                hidden = out.last_hidden_state
            else:
                out = model(**t, output_hidden_states=True)
                logits, hidden = out.logits, out.hidden_states[-1]
        np.savez(
            os.path.join(args.out, f"{name}.npz"),
            **feed,
            logits=logits.numpy().astype(np.float32),
            last_hidden_state=hidden.numpy().astype(np.float32),
        )
        made[name] = {"class": cls.__name__, "config": kwargs, "do_lower_case": lower}
        print(f"{name}: {cls.__name__} -> {directory}", flush=True)
    with open(os.path.join(args.out, "models.json"), "w") as f:
        json.dump(made, f, indent=1)


if __name__ == "__main__":
    main()
