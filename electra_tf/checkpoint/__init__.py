"""Checkpoints, one module a job:

- `locate`: from a path to a checkpoint prefix (this project's, an original release, Hugging
  Face directories, a keras-hub preset), the config and vocab beside it, any config.json read;
- `files`: a checkpoint's files on disk: complete or not, the newest complete one of a
  directory, saves that lose nothing when the disk fills up;
- `restore`: restoring into built variables, from this project's object-based checkpoints and by
  name from the original's TF1 ones, Hugging Face directories and keras-hub presets; warm starts;
- `manager`: the training loops' one `tf.train.CheckpointManager` (pretraining's and
  fine-tuning's): save at the step's number, resume from the newest complete checkpoint;
- `load_model`: rebuilding a pretraining model (or its parts) from a checkpoint on disk.
"""
