"""The Hugging Face side of bench/hf_interop.py: loads a directory with `transformers` and runs it.

Runs in the Hugging Face peer's environment (torch + transformers); needs nothing from
electra_tf:

    /work/venv-bench/bin/python bench/hf_peer_check.py --dir HF_DIR --inputs IN.npz --out OUT.npz \
        [--sentences SENTENCES.json]

Loads HF_DIR with the class its config.json names (`ElectraForPreTraining`, `ElectraForMaskedLM`
or `ElectraModel`, `output_loading_info=True`) and `AutoTokenizer`, recording every warning
transformers logs while loading; runs the model in eval mode on IN.npz's input_ids,
attention_mask and token_type_ids (int32 [B, L]); writes OUT.npz (`logits`, `last_hidden_state`,
float32; and `text_ids_<i>`, the tokenizer's ids of each sentence pair of SENTENCES.json, a list
of [text_a, text_b or null]). Prints one JSON line: the class, the loading info (missing,
unexpected, mismatched keys, errors) and the warnings.
"""

import argparse
import json
import logging
import warnings

import numpy as np
import torch
import transformers
from transformers import AutoTokenizer


class Collect(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dir", required=True)
    p.add_argument("--inputs", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--sentences", default=None)
    args = p.parse_args()
    torch.set_num_threads(2)
    collect = Collect()
    transformers.logging.set_verbosity_warning()
    transformers.logging.get_logger().addHandler(collect)
    with open(f"{args.dir}/config.json") as f:
        name = json.load(f)["architectures"][0]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model, info = getattr(transformers, name).from_pretrained(
            args.dir, output_loading_info=True
        )
        tokenizer = AutoTokenizer.from_pretrained(args.dir)
    model.eval()
    feed = np.load(args.inputs)
    t = {
        k: torch.from_numpy(feed[k].astype(np.int64))
        for k in ("input_ids", "attention_mask", "token_type_ids")
    }
    with torch.no_grad():
        if name == "ElectraModel":
            out = model(**t)
            logits = hidden = out.last_hidden_state
        else:
            out = model(**t, output_hidden_states=True)
            logits, hidden = out.logits, out.hidden_states[-1]
    result = {"logits": logits.numpy(), "last_hidden_state": hidden.numpy()}
    if args.sentences:
        with open(args.sentences) as f:
            for i, (a, b) in enumerate(json.load(f)):
                result[f"text_ids_{i}"] = np.asarray(tokenizer(a, b)["input_ids"], np.int32)
    np.savez(args.out, **result)
    report = {
        "class": name,
        "tokenizer": type(tokenizer).__name__,
        "loading_info": {k: sorted(map(str, v)) for k, v in info.items()},
        "warnings": collect.messages + [str(w.message) for w in caught],
    }
    print(json.dumps(report), flush=True)


if __name__ == "__main__":
    main()
