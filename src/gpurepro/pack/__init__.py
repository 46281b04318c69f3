"""Packs: one archive that runs a case on an offline GPU node.

``python -m gpurepro pack CASE`` (gpurepro.pack.archive) builds the case where its toolchain
installs and writes ``build/packs/<case>-<target>-<commit>.tar.gz``: the harness, ``native/``,
the case folder, its built artifacts and runtime wheels (each checked against its build index),
the case's committed result documents (the decisive design's priors), the CPU stage of any
bisection asked for, a ``pack.json`` naming all of it with sha256s, and ``run.py``. On the node,
``python3 run.py`` (gpurepro.pack.node, standard library only) checks the files, runs what
``make <case>`` would run there, and says which journals to bring back to ``record``.
"""
