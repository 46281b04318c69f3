"""Release sweeps: a case over the releases of a toolchain, which release broke it, which fixed
it, and what each emits.

A sweep builds every release on the CPU (identical artifacts counted once, by sha256), runs the
distinct artifacts it chooses on a GPU through the harness itself (``python -m gpurepro run
... --artifact NAME=PATH``, one journal each), and assembles one document with its Markdown.
It comes in two kinds, each with its schema built on one core (``schema/sweep.schema.json``):

- a **bisection** (``python -m gpurepro bisect CASE --axis NAME``, ``nox -s bisect``): a
  toolchain axis the manifest declares (``Case.axes``: ``gpurepro.case.Axis``), every release
  pip lists in its range, each built with its wheel's program; the GPU runs the fewest distinct
  artifacts that pin every boundary, ``results/<case>/bisect_<axis>_<stamp>_<gpu>.json``;
- a **matrix** (``python -m gpurepro matrix ...``, ``nox -s tile_matrix``): a case's declared
  grid of front-end releases × toolchain families (``cases/<case>/matrix.py``), each cell built
  in its own environment; the GPU runs every distinct cubin, newest first under a budget,
  ``results/<case>/matrix_<stamp>_<gpu>.json``.

The modules, by stage:

- CPU: ``cpu`` (a bisection's axis: every release built, its SASS, the files the build read,
  ``changed`` for a CPU stage the manifest has moved away from); ``spec``, ``cells``,
  ``collect``, ``emitted``, ``reasons`` (a matrix's grid, its cells, its CPU document, what each
  cubin emits, one-line reasons of what failed).
- GPU (standard library only, no network): ``choose`` (the two ways to choose what runs: a
  bisection's search, from ``search``, whose runs decide each point's class on the node, with
  ``timed`` for an axis decided on times; a matrix's grid), ``gpu`` (the one GPU stage), and
  ``model`` (the typed record it writes, ``sweep-gpu.json``, and the documents' kinds and names).
- Assembly and after (analysis packages): ``assemble`` (one for both kinds); ``bisection`` and
  ``matrix`` (what each document derives from the rest and its consistency checks, which
  ``validation`` adds to the schema's); ``table``
  (either kind's Markdown); ``summary`` (a case's committed bisections for its verdict).
"""
