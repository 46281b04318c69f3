"""Build: run each artifact's command from the pinned toolchain, content-addressed under build/.

The key of an artifact is a hash of its command template, the contents of its sources, the
target, the exact version strings of its tools and the resolved versions of the case's pins,
and the keys of the artifacts it depends on. An unchanged key reuses the earlier output.
The index ``build/<case>/<target>/artifacts.json`` is what the run stage reads: it works from a
prebuilt build/ on a GPU node with no toolchain and no network.

Reproducible builds: the same key gives byte-identical outputs in any checkout folder, so a
committed run's sha256 can be checked against a fresh clone's build. Every command runs with
cwd = repository root and placeholders expand to paths relative to it; on top of that:

- g++ gets ``-ffile-prefix-map=<root>=.`` (``__FILE__``, debug info, ``DW_AT_comp_dir``).
- nvcc gets, through its documented ``NVCC_APPEND_FLAGS`` (so nvcc run by a case script is
  covered too), ``--keep --keep-dir <fresh temp dir>``: without it the host object's file
  symbol is ``tmpxft_<pid>_..._x.cudafe1.cpp`` and every executable differs from the last; and
  ``-Xcompiler=-ffile-prefix-map=<root>=.``. Device line info (``-lineinfo``, ``-G``) cannot be
  remapped: cicc writes the absolute folder and the source's mtime into ``.debug_line``, so
  artifact commands must not ask for it.
- A Python build script (``{python} path/to/script.py ...``) runs through a small runner that
  compiles it under the name ``gpurepro/<path>``: Python would otherwise name its code by the
  absolute path (``__main__`` is absolute since 3.9), and cuda.tile puts that name into the
  Tile IR debug locations, which tileiras copies into the cubin's ``.debug_line``. The name is
  deliberately not a path that resolves from the root: tileiras stamps the mtime and size of
  any source it can open there, and a checkout's mtimes differ. ``__file__``, ``sys.argv`` and
  ``sys.path[0]`` are what ``python script.py`` gives. Modules the script imports keep their
  real paths (a kernel must live in the script itself to be reproducible).
- ``CUDA_TILE_CACHE_DIR=off``: cuda.tile's cubin cache (``~/.cache/cutile-python``) is keyed on
  the bytecode only and lives outside build/; ``SOURCE_DATE_EPOCH=0`` for anything that stamps
  dates; ``NVCC_PREPEND_FLAGS`` from the caller's environment is dropped.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ..case import toolchain
from ..case.model import PLACEHOLDER, Artifact, Case
from ..errors import BuildError
from ..model.files import sha256_file, write_atomic
from . import releases as releases_mod

# What other modules use; the rest is this module's own.
__all__ = [
    "build_case", "INDEX_NAME", "index_path", "json", "load_index", "RECIPE", "reproducible_env"
]

INDEX_NAME = "artifacts.json"
# Bump when the way commands run changes their outputs: it is part of every key.
RECIPE = "reproducible-1"
# The name Python build scripts' code carries: gpurepro/<path from the repository root>.
SCRIPT_PREFIX = "gpurepro"
# Environment every command gets (an artifact's own env still wins).
BUILD_ENV = {"CUDA_TILE_CACHE_DIR": "off", "SOURCE_DATE_EPOCH": "0"}

# `python -c` program that runs sys.argv[2] as __main__ with its code named sys.argv[1]. The
# source goes into linecache, so inspect (cuda.tile reads kernels' source) and tracebacks work.
_SCRIPT_RUNNER = """\
import builtins, importlib.util, linecache, os, sys, types
shown, script = sys.argv[1], sys.argv[2]
with open(script, 'rb') as fh:
    raw = fh.read()
text = importlib.util.decode_source(raw)
linecache.cache[shown] = (len(text), None, text.splitlines(True), shown)
code = compile(raw, shown, 'exec', dont_inherit=True)
main = types.ModuleType('__main__')
main.__file__, main.__builtins__, main.__spec__ = script, builtins, None
sys.modules['__main__'] = main
sys.argv = [script, *sys.argv[3:]]
sys.path[0] = os.path.dirname(os.path.realpath(script))
exec(code, main.__dict__)
"""


def _rel(path: Path, root: Path) -> str:
    """Paths under the repository are recorded relative to it, so a copied tree still works."""
    return str(path.relative_to(root)) if path.is_relative_to(root) else str(path)


def index_path(build_dir: Path, case: Case, target: str) -> Path:
    return build_dir / case.name / target / INDEX_NAME


def _source_path(case: Case, root: Path, src: str) -> Path:
    p = case.directory / src
    return p if p.exists() else root / src


def _order(case: Case, target: str) -> list[Artifact]:
    """Artifacts for this target, dependencies first."""
    wanted = [a for a in case.artifacts if not a.archs or target in a.archs]
    by_name = {a.name: a for a in wanted}
    done: list[Artifact] = []
    seen: set[str] = set()

    def visit(a: Artifact, stack: tuple[str, ...]) -> None:
        if a.name in seen:
            return
        if a.name in stack:
            raise BuildError(f"dependency cycle: {' -> '.join((*stack, a.name))}")
        for dep in a.dependencies():
            if dep not in by_name:
                raise BuildError(f"{a.name} needs {dep}, which is not built for {target}")
            visit(by_name[dep], (*stack, a.name))
        seen.add(a.name)
        done.append(a)

    for a in wanted:
        visit(a, ())
    return done


def build_case(
    case: Case,
    target: str,
    root: Path,
    build_dir: Path,
    on_event: Callable[[str, str], None] | None = None,
) -> dict[str, Any]:
    """Build every artifact of ``case`` for ``target``; return (and write) the index."""
    say = on_event or (lambda name, status: None)
    pins = case.pins_for(target)
    resolved = toolchain.installed_versions(pins)
    missing = [name for name, version in resolved.items() if version is None]
    if missing:
        raise BuildError(
            f"pinned packages not installed in this environment: {', '.join(missing)}; "
            f"run the case through nox (it installs {', '.join(pins)})"
        )
    root = root.resolve()
    build_dir = build_dir.resolve() if build_dir.is_absolute() else (root / build_dir).resolve()
    entries: dict[str, dict[str, Any]] = {}
    tools_used: dict[str, str] = {}
    # Artifacts built per toolchain release (Artifact.per): each level's program, locked.
    released = _released_tools(case, root, build_dir) if any(a.per for a in case.artifacts) else {}
    for art, level in _builds(case, target):
        rel = released[(art.per, level)] if art.per else None
        given = {rel["tool"]: str(rel["program"])} if rel else {}
        tools = sorted((_tool_placeholders(case, art) | set(art.tools)) - set(given))
        versions = {t: toolchain.tool_version(t, case.tools) for t in tools}
        tools_used.update(versions)
        if rel:
            versions[rel["tool"]] = toolchain.version_of(rel["program"])
        name = art.built_name(level)
        key = _key(case, art, target, root, versions, resolved, entries,
                   release=rel["entry"] if rel else None)
        out_dir = build_dir / case.name / "artifacts" / name / key[:20]
        stamp = out_dir / STAMP_NAME
        out_dir.parent.mkdir(parents=True, exist_ok=True)
        # Two builds of one tree at once (two sessions, parallel tests) take turns per artifact:
        # the second finds the first's stamp instead of deleting its folder mid-build.
        with open(out_dir.parent / f"{key[:20]}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            outputs = cached_outputs(stamp, key, out_dir, art.outputs)
            if outputs is not None:
                say(name, "cached")
            else:
                say(name, "building")
                _run_command(case, art, target, root, out_dir, entries, given)
                outputs = write_stamp(stamp, key, out_dir, art.outputs)
                say(name, "built")
        entries[name] = {
            "path": _rel(out_dir / art.outputs[0], root),
            "dir": _rel(out_dir, root),
            "outputs": outputs,
            "sha256": outputs[art.outputs[0]],
            "key": key,
            "tools": versions,
            "command": list(art.command),
            "description": art.description,
            **({"release": _release_record(rel, versions[rel["tool"]])} if rel else {}),
        }
    index = {
        "case": case.name,
        "target": target,
        "toolchain": {"requested": pins, "resolved": resolved, "tools": tools_used,
                      **({"arms": arm_releases(case, entries)} if released else {})},
        "artifacts": entries,
        "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    path = index_path(build_dir, case, target)
    try:  # a temporary name per writer: concurrent builds each replace it whole
        write_atomic(path, json.dumps(index, indent=2, sort_keys=True))
    except OSError as exc:
        raise BuildError(f"cannot write the build index {path}: {exc.strerror or exc}") from None
    return index


def _builds(case: Case, target: str) -> list[tuple[Artifact, Any]]:
    """(artifact, level) in build order: one build per level an arm uses for an artifact
    declared ``per`` a factor of releases, one (level None) for any other."""
    used: dict[str, list[Any]] = {}
    for factors in case.resolved_arms().values():
        for name, level in factors.items():
            if level not in used.setdefault(name, []):
                used[name].append(level)
    out: list[tuple[Artifact, Any]] = []
    for art in _order(case, target):
        if art.per:
            levels = case.factors[art.per].levels
            out += [(art, lv) for lv in levels if lv in used.get(art.per, [])]
        else:
            out.append((art, None))
    return out


def _released_tools(case: Case, root: Path, build_dir: Path) -> dict[tuple[str, Any], Any]:
    return releases_mod.tools_for(case, root, build_dir / "releases")


def _release_record(rel: Mapping[str, Any], version_line: str) -> dict[str, Any]:
    return releases_mod.record(rel["entry"], rel["tool"], version_line)


def arm_releases(case: Case, entries: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """Arm -> factor -> the release its artifacts were built with (the document's
    ``toolchain.arms``: what each arm's build used beyond the case's pins)."""
    out: dict[str, Any] = {}
    for arm, factors in case.resolved_arms().items():
        mine = {}
        for art in case.artifacts:
            entry = entries.get(art.built_name(factors.get(art.per))) if art.per else None
            if entry and "release" in entry:
                mine[art.per] = {k: v for k, v in entry["release"].items()}
        if mine:
            out[arm] = mine
    return out


STAMP_NAME = ".artifact.json"


def cached_outputs(stamp: Path, key: str, out_dir: Path,
                   outputs: tuple[str, ...] | list[str]) -> dict[str, str] | None:
    """The outputs' sha256 when the stamp says this key built them and every output still has
    the sha256 the stamp holds; None otherwise (no stamp, another key, an older stamp without
    the outputs' sha256, an output missing or changed: a full disk can leave a truncated
    binary that a compiler still exits 0 for), and the artifact is built again."""
    try:
        recorded = json.loads(stamp.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(recorded, dict) or recorded.get("key") != key:
        return None
    want = recorded.get("outputs")
    if not isinstance(want, dict) or set(want) != set(outputs):
        return None
    have = {}
    for name in outputs:
        p = out_dir / name
        if not p.is_file() or sha256_file(p) != want[name]:
            return None
        have[name] = want[name]
    return have


def write_stamp(stamp: Path, key: str, out_dir: Path,
                outputs: tuple[str, ...] | list[str]) -> dict[str, str]:
    """After the outputs are on disk (synced): the stamp with every output's sha256, written
    atomically; a failed write names the stamp and leaves none (the next build starts over)."""
    try:
        shas = {}
        for name in outputs:
            fd = os.open(out_dir / name, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
            shas[name] = sha256_file(out_dir / name)
        write_atomic(stamp, json.dumps({"key": key, "outputs": shas}, indent=1))
    except OSError as exc:
        raise BuildError(f"cannot write the build stamp {stamp}: {exc.strerror or exc}") from None
    return shas


def _tool_placeholders(case: Case, art: Artifact) -> set[str]:
    """The placeholders of ``art``'s command that name a tool (the case's table or the defaults)."""
    return {name for name in art.placeholders() if toolchain.is_tool(name, case.tools)}


def _key(
    case: Case,
    art: Artifact,
    target: str,
    root: Path,
    versions: Mapping[str, str],
    resolved: Mapping[str, str | None],
    entries: Mapping[str, Mapping[str, Any]],
    release: Mapping[str, Any] | None = None,
) -> str:
    h = hashlib.sha256()
    material = {
        "case": case.name,
        "artifact": art.name,
        "command": list(art.command),
        "env": dict(art.env),
        "outputs": list(art.outputs),
        "target": target,
        "tools": dict(versions),
        "pins": dict(resolved),
        "deps": {d: entries[d]["key"] for d in art.dependencies()},
        "recipe": RECIPE,
        # Standard output captured as an output (Artifact.stdout); absent otherwise, so the
        # keys of every artifact without it stay what they were.
        **({"stdout": art.stdout} if art.stdout else {}),
        # A release's wheel (its sha256 as locked): the key of an artifact built with it.
        **({"release": {k: release[k] for k in ("package", "version", "sha256")}}
           if release else {}),
    }
    h.update(json.dumps(material, sort_keys=True).encode())
    for src in sorted(art.sources):
        p = _source_path(case, root, src)
        h.update(src.encode() + b"\0")
        h.update(p.read_bytes() if p.is_file() else b"<missing>")
    return h.hexdigest()


def _run_command(
    case: Case,
    art: Artifact,
    target: str,
    root: Path,
    out_dir: Path,
    entries: Mapping[str, Mapping[str, Any]],
    given: Mapping[str, str] | None = None,
) -> None:
    if out_dir.exists():
        shutil.rmtree(out_dir)
    out_dir.mkdir(parents=True)
    values: dict[str, str] = {
        "case": str(case.directory.relative_to(root)),
        "native": "native",
        "out": _rel(out_dir, root),
        "arch": target,
    }
    names = art.placeholders()
    if "virtual_arch" in names:
        values["virtual_arch"] = _virtual_arch(target)
    for tool in _tool_placeholders(case, art) - set(given or {}):
        values[tool] = str(toolchain.find_tool(tool, case.tools))
    values.update(given or {})
    if "nvcc_lib" in names:
        values["nvcc_lib"] = str(toolchain.nvcc_lib_dir(toolchain.find_tool("nvcc", case.tools)))
    for dep in art.dependencies():
        values[f"artifact:{dep}"] = entries[dep]["dir"]
    unknown = names - set(values)
    if unknown:
        raise BuildError(f"{art.name}: unknown placeholder(s) {sorted(unknown)} in its command")
    argv = [PLACEHOLDER.sub(lambda m: values[m.group(1)], part) for part in art.command]
    plain = argv
    argv = _reproducible_argv(art, plain, root)
    with tempfile.TemporaryDirectory(prefix="gpurepro-nvcc-") as keep:
        env = {k: v for k, v in os.environ.items() if k != "NVCC_PREPEND_FLAGS"}
        env.update(reproducible_env(root, Path(keep)))
        env.update(art.env)
        # Tools from wheels find their siblings (cicc, ptxas, headers) relative to themselves.
        if "nvcc" in values:
            env["PATH"] = f"{Path(values['nvcc']).parent}{os.pathsep}{env.get('PATH', '')}"
        log = out_dir / "build.log"
        with open(log, "w") as fh:
            fh.write("$ " + " ".join(plain) + "\n")
            if argv[1:3] == ["-c", _SCRIPT_RUNNER]:
                fh.write(f"# ran through the build's script runner, its code named {argv[3]}\n")
            elif argv != plain:
                fh.write("# ran as: " + " ".join(argv) + "\n")
            fh.write("# env: " + " ".join(f"{k}={env[k]}" for k in (*BUILD_ENV, "NVCC_APPEND_FLAGS"))
                     + "\n")
            if art.stdout:
                fh.write(f"# standard output to {art.stdout}\n")
            fh.flush()
            if art.stdout:  # Artifact.stdout: the output file, standard error to the log
                with open(out_dir / art.stdout, "wb") as captured:
                    done = subprocess.run(argv, cwd=root, stdout=captured, stderr=fh, env=env,
                                          check=False)
            else:
                done = subprocess.run(argv, cwd=root, stdout=fh, stderr=subprocess.STDOUT,
                                      env=env, check=False)
    missing = [o for o in art.outputs if not (out_dir / o).is_file()]
    if done.returncode != 0 or missing:
        tail = log.read_text(errors="replace")[-3000:]
        why = f"exit status {done.returncode}" if done.returncode else f"missing {missing}"
        raise BuildError(f"building {art.name} failed ({why}); log {log}:\n{tail}", log=log)


def _virtual_arch(target: str) -> str:
    """The virtual architecture of a real target (``sm_103a`` -> ``compute_103a``): nvcc's
    ``-gencode arch=compute_103a,code=sm_103a`` builds SASS only, as ``-arch=sm_103a`` does not
    (it embeds PTX too), and ``-arch=sm_103a -code=sm_103a`` is rejected."""
    if not target.startswith("sm_"):
        raise BuildError(f"{{virtual_arch}}: target must look like sm_103a, not {target!r}")
    return "compute_" + target[3:]


def reproducible_env(root: Path, keep_dir: Path) -> dict[str, str]:
    """Environment that keeps a command's outputs independent of the checkout folder."""
    nvcc_flags = ["--keep", "--keep-dir", str(keep_dir)]
    if not any(c.isspace() for c in str(root)):  # NVCC_APPEND_FLAGS splits on blanks
        nvcc_flags.append(f"-Xcompiler=-ffile-prefix-map={root}=.")
    return {**BUILD_ENV, "NVCC_APPEND_FLAGS": " ".join(nvcc_flags)}


def _reproducible_argv(art: Artifact, argv: list[str], root: Path) -> list[str]:
    """g++ with the root mapped to ``.``; a Python script through the runner (module docstring)."""
    if art.command and art.command[0] == "{gxx}":
        return [argv[0], f"-ffile-prefix-map={root}=.", *argv[1:]]
    if art.command and art.command[0] == "{python}" and len(argv) > 1 and argv[1].endswith(".py"):
        script = Path(argv[1])
        full = script if script.is_absolute() else root / script
        if full.is_file() and full.resolve().is_relative_to(root):
            name = f"{SCRIPT_PREFIX}/{full.resolve().relative_to(root).as_posix()}"
            return [argv[0], "-c", _SCRIPT_RUNNER, name, *argv[1:]]
    return argv


def load_index(build_dir: Path, case: Case, target: str) -> dict[str, Any]:
    path = index_path(build_dir, case, target)
    if not path.is_file():
        raise BuildError(
            f"no build for {case.name} / {target} at {path}: run the build first "
            f"(nox -s {case.name} builds it, or python -m gpurepro build {case.name} --arch {target})"
        )
    index: dict[str, Any] = json.loads(path.read_text())
    return index
