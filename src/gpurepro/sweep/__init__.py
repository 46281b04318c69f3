"""Bisection over toolchain releases, for any case: which release broke it, which fixed it.

A manifest declares a toolchain axis (``Case.axes``: ``gpurepro.case.Axis``): a PyPI package
(or several, in release order), a version range whose releases pip lists when the bisection
runs (never typed in), the
program each release's wheel provides, the build command that program runs, and the manifest
artifact the output stands in for in which arms. The stages, one module each:

- ``cpu`` (CPU, pip, the network): every release built (``gpurepro.build.releases``, the
  build's own machinery: the wheel pip resolves, its program), why any could not be, identical artifacts once (by sha256), each distinct one
  disassembled (``gpurepro.build.sass``) with the SASS facts the axis watches; writes the CPU
  document.
- ``search``: the points (distinct artifacts in release order), the segments (consecutive
  points with the same watched facts) and the binary search between runs that differ.
- ``gpu`` (GPU node, standard library only, no network): the harness itself (``python -m
  gpurepro run ... --artifact NAME=PATH``) on the points the search needs, one journal each.
- ``assemble`` (analysis packages): the CPU document and the GPU stage's journals into one
  document, ``results/<case>/bisect_<axis>_<stamp>_<gpu>.json``, validated against
  ``schema/bisect.schema.json``; ``document`` derives each release's result and the boundaries,
  each between two adjacent releases with the SASS difference at it; ``table`` renders it.
- ``from_matrix``: a toolchain matrix document (gpurepro.matrix) read as bisections, one per
  toolchain family: the matrix's table, cell for cell, from the bisection's data.

The command is ``python -m gpurepro bisect CASE --axis NAME`` (gpurepro.cli.bisect), and
``nox -s bisect -- CASE --axis NAME``.
"""
