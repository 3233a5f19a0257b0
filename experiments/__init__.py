"""The experiments: scripts that use the package (`electra_tf`) to answer research questions, and
their records. A client of the package, never imported by it; run from the repository root as
`python -m experiments.NAME` (see experiments/README.md)."""
