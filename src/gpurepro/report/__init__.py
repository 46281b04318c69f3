"""Report: a validated result document in, files out; nothing here runs or records a trial.

``markdown`` writes the report section by section and, beside it, the pictures: ``forest``
(failure rate per arm against the baseline), ``survival`` (Kaplan-Meier), ``per_gpu`` (the
forest plot per GPU or host); ``numbers`` and ``figure`` are what they share. ``compare`` sets
runs of one case side by side (``comparison``: what it finds, typed; ``compare --json`` writes
it); ``comment`` is the body of a GitHub issue comment and ``rerun``
its rerun steps; ``index`` is results/README.md; ``cluster`` is the report's section for a
cluster run.
"""
