"""Pilot rounds of the experiments (their scripts; run as `python -m experiments.pilot.X`)."""
