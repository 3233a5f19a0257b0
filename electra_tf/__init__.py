"""ELECTRA pretraining and fine-tuning in TensorFlow 2 / Keras 3."""

__version__ = "0.1.0"
