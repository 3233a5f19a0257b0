"""From a path to a checkpoint and what describes it, whatever its format: this project's
checkpoints (a prefix, or a directory holding them), an original google-research release,
Hugging Face directories (one, or "DISC_DIR,GEN_DIR") and keras-hub presets
(`electra_tf.foreign_dirs` tells these apart; their adapters read them).

`find_checkpoint` / `resolve_checkpoint` give the prefix (a foreign directory as it is),
`find_beside` the config or vocab file beside it (or in the directory above), `vocab_beside` its
vocab, and `read_run_config` any config.json (a run's, a BERT JSON model config, Hugging
Face's, keras-hub's) as one `run_dir.RunConfig`.
"""

import os
import sys
from typing import Optional, Sequence

import tensorflow as tf

from electra_tf import run_dir
from electra_tf.checkpoint import files as checkpoint_files
from electra_tf.errors import UserError
from electra_tf.foreign_dirs import (
    HF_TOKENIZER_FILE,
    foreign_dirs,
    huggingface_dirs,
    is_preset,
)
from electra_tf.huggingface import config as hf_config
from electra_tf.huggingface.tokenizer import vocab_file
from electra_tf.keras_hub import config as kh_config


def find_checkpoint(path: str) -> Optional[str]:
    """A checkpoint prefix from a prefix or a directory (its latest complete checkpoint: the
    state file's, else the highest-numbered; incomplete ones are skipped with a warning), or
    None. A Hugging Face directory (or pair) or a keras-hub preset (`foreign_dirs`) is returned
    as it is."""
    if os.path.isdir(path):
        found = checkpoint_files.newest_complete(path, lambda m: print(m, file=sys.stderr))
        return found or (path if foreign_dirs(path) else None)
    if tf.io.gfile.exists(path + ".index"):
        why = checkpoint_files.checkpoint_problem(path)
        if why is not None:
            raise UserError(f"{path}: not a complete checkpoint: {why}")
        return path
    return path if "," in path and huggingface_dirs(path) else None


def resolve_checkpoint(path: str) -> str:
    """`find_checkpoint`, or a UserError saying what is missing."""
    prefix = find_checkpoint(path)
    if prefix is not None:
        return prefix
    if os.path.isdir(path):
        raise UserError(f"{path}: the directory holds no checkpoint (no *.index file)")
    raise UserError(f"{path}: no such checkpoint (neither a directory nor {path}.index)")


def latest_checkpoint(run: run_dir.RunDirectory) -> Optional[str]:
    """The newest complete checkpoint of a run directory, or None."""
    return find_checkpoint(run.path) if run.exists() else None


def find_beside(path: str, names: Sequence[str]) -> Optional[str]:
    """The first of `names` in the directory of a checkpoint prefix (or in `path` itself when it
    is a directory; in the first of a pair of Hugging Face directories), else in the directory
    above it."""
    if "," in path and huggingface_dirs(path):
        path = huggingface_dirs(path)[0]
    path = os.path.abspath(path)
    directory = path if os.path.isdir(path) else os.path.dirname(path)
    for d in (directory, os.path.dirname(directory)):
        for name in names:
            candidate = os.path.join(d, name)
            if os.path.exists(candidate):
                return candidate
    return None


def vocab_beside(path: str) -> Optional[str]:
    """The vocab.txt beside a checkpoint (`find_beside`); a Hugging Face directory's own
    vocab.txt, else the WordPiece vocab of its tokenizer.json (written to a temporary file),
    comes first; a keras-hub preset's is its assets/tokenizer/vocabulary.txt."""
    if is_preset(path):
        return kh_config.vocab_path(path)
    dirs = huggingface_dirs(path)
    if dirs:
        found = vocab_file(dirs[0], run_dir.VOCAB_FILE, HF_TOKENIZER_FILE)
        if found is not None:
            return found
    return find_beside(path, (run_dir.VOCAB_FILE,))


def read_run_config(path: str) -> run_dir.RunConfig:
    """Any config.json (a run's, a BERT JSON model config, a Hugging Face directory's, a
    keras-hub preset's) read as one `RunConfig`."""
    d = run_dir.read_json_object(path)
    kind = run_dir.kind_of(d, path)
    if kind == run_dir.HUGGINGFACE:
        return hf_config.run_config(d, path)
    if kind == run_dir.KERAS_HUB:
        return kh_config.run_config(d, path)
    return run_dir.run_config(d, path)
