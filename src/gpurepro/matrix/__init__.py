"""Toolchain matrix: a case's kernel exported by every release of its toolchain, what each
release emits, and on a GPU how each distinct build fares in the case's trials.

A case opts in with a ``matrix.py`` beside its manifest (plain data: the releases, the pins of
each family, the export variants, the arms; see ``spec``). The stages, one module each:

- ``cell`` (CPU, in the cell's own virtualenv, standard library only): one release × one family.
  The nox session installs the pins and hands over the installer's outcome; the cell reads the
  resolved versions from the environment's installed metadata, exports the kernel with each
  variant and builds the plain control cubin through the case's own artifact recipes
  (``gpurepro.build``: reproducible, logged), and writes ``cells/<cell>.json``.
- ``collect`` (CPU, analysis packages): every cell record, the ELF facts of every cubin
  (``gpurepro.build.elf``), identical cubins grouped by sha256, the line-info check; writes the CPU
  matrix document, which lists the distinct cubins the GPU stage runs.
- ``gpu`` (GPU node, standard library only): for each distinct cubin, the harness itself
  (``python -m gpurepro run ... --artifact NAME=PATH``), one journal per cubin; exit 5 without
  a GPU.
- ``assemble`` (analysis packages): the CPU document and the GPU stage's journals into one
  document, ``results/<case>/matrix_<stamp>_<gpu>.json``, validated against
  ``schema/matrix.schema.json``.
- ``table``: the README table (release → what it emits → crash rate) from a document.

Their commands (`python -m gpurepro matrix ...`) are gpurepro.cli.matrix.
"""
