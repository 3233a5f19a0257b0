"""Span-extraction question answering (SQuAD, MRQA): readers (`reader.py`), sliding windows
(`features.py`), the tasks (`task.py`), the joint beam head (`head.py`), decoding and official
scoring (`metrics.py`, `scorer.py`), SavedModel signatures (`serving.py`)."""
