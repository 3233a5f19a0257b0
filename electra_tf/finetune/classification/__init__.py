"""GLUE classification and regression: reader and featuriser (`task.py`), heads (`head.py`),
scorers (`scorer.py`), SavedModel signatures (`serving.py`)."""
