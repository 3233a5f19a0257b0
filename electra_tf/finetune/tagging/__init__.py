"""Sequence tagging (chunk, ner): CoNLL reader and featuriser (`task.py`), head (`head.py`),
span-level scoring (`scorer.py`), SavedModel signatures (`serving.py`)."""
