"""The package layout's promises: only the command line (gpurepro/cli/) sees argparse;
recording never reaches for the report; the run stage never imports the analysis; the model
imports no stage; no module name is kept for old imports (no release ever shipped); one release
sweep; at most 15 imports of gpurepro modules inside functions; and tests/ mirrors the
packages."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import ROOT

# The names old imports used, removed with nothing in their place.
GONE = ("gpurepro.manifest", "gpurepro.toolchain", "gpurepro.elf", "gpurepro.instruments",
        "gpurepro.analysis", "gpurepro.build")


def test_no_old_module_name_is_kept():
    for name in GONE:
        assert not (ROOT / "src" / (name.replace(".", "/") + ".py")).exists(), name
        assert not (ROOT / "src" / name.replace(".", "/")).is_dir(), name


SRC = ROOT / "src" / "gpurepro"


def test_one_release_sweep_package():
    """The bisection and the matrix are two ways to choose releases of one sweep (gpurepro.sweep),
    not two packages."""
    assert (SRC / "sweep" / "__init__.py").is_file()
    for gone in ("bisect", "matrix"):
        assert not (SRC / gone).exists() and not (SRC / f"{gone}.py").exists(), gone


# tests/ mirrors the packages: a folder per package of src/gpurepro that has tests, and these
# folders of the repository's own (cases/, the project's files, whole flows through the command
# line, nox or make), beside the fixtures and data they read.
TESTS = ROOT / "tests"
TEST_FOLDERS_OF_THEIR_OWN = {"cases", "project", "e2e", "fixtures", "data"}


def test_the_tests_mirror_the_packages():
    at_the_top = sorted(p.name for p in TESTS.glob("test_*.py"))
    assert not at_the_top, f"tests belong in the folder of the package they test: {at_the_top}"
    packages = {p.name for p in SRC.iterdir() if (p / "__init__.py").is_file()}
    folders = {p.name for p in TESTS.iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert folders - TEST_FOLDERS_OF_THEIR_OWN <= packages, sorted(
        folders - TEST_FOLDERS_OF_THEIR_OWN - packages)
    for folder in folders - {"fixtures", "data"}:
        assert (TESTS / folder / "__init__.py").is_file(), folder
        assert any((TESTS / folder).glob("test_*.py")), folder


def _imports(path):
    """Every module a file imports, anywhere in it (function bodies too), as absolute names."""
    import ast

    parts = path.relative_to(ROOT / "src").with_suffix("").parts
    package = parts[:-1]  # a module's package; an __init__'s own package
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package[:len(package) - node.level + 1]
                base = ".".join([*up, *([base] if base else [])])
            found |= {base} | {f"{base}.{a.name}" for a in node.names}
    return found


def _python_files(folder):
    return sorted(p for p in folder.rglob("*.py") if "__pycache__" not in p.parts)


# The Python driver kit is imported by trial programs, each a process with a command line of its
# own (--seconds, --max-exposure, ...): it parses that, never the harness's flags.
OWN_COMMAND_LINE = {SRC / "case" / "driver.py", SRC / "case" / "cubin_check.py",
                    SRC / "case" / "python_program.py"}


def test_no_module_outside_cli_imports_argparse():
    outside = [p for p in _python_files(SRC) if "cli" not in p.relative_to(SRC).parts[:1]
               and p not in OWN_COMMAND_LINE]
    offenders = [str(p.relative_to(ROOT)) for p in outside
                 if any(m == "argparse" or m.startswith("argparse.") for m in _imports(p))]
    assert not offenders, f"argparse is the command line's (gpurepro/cli/): {offenders}"


def test_record_does_not_import_report():
    offenders = {str(p.relative_to(ROOT)): sorted(m for m in _imports(p)
                                                   if m.startswith("gpurepro.report"))
                 for p in _python_files(SRC / "record")}
    assert not {k: v for k, v in offenders.items() if v}, offenders
    # Nor through another module: importing every record module leaves report unimported.
    code = ("import importlib, sys\n"
            "for m in ('document', 'result', 'scrub', 'validation'):\n"
            "    importlib.import_module('gpurepro.record.' + m)\n"
            "print(sorted(m for m in sys.modules if m.startswith('gpurepro.report')))\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                          env={"PYTHONPATH": str(ROOT / "src"), "PATH": ""})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_no_case_folder_ships_a_gpu_node_script():
    """A case runs on an offline node from `gpurepro pack` (gpurepro.pack.node), not from a
    script of its own; the reporters' seed files are left as filed."""
    scripts = [str(p.relative_to(ROOT)) for p in sorted((ROOT / "cases").rglob("*.sh"))
               if "seed" not in p.relative_to(ROOT / "cases").parts[1:]]
    assert not scripts, f"GPU-node scripts in case folders (gpurepro pack replaces them): {scripts}"


def _gpurepro_imports(package):
    return {str(p.relative_to(ROOT)): sorted(m for m in _imports(p) if m.startswith("gpurepro."))
            for p in _python_files(SRC / package)}


def test_the_run_stage_never_imports_the_analysis():
    """The flow hands the run its design, decider and allocation (gpurepro.cli.run,
    gpurepro.analyze.designing, gpurepro.analyze.allocation): run/ imports nothing of analyze/."""
    offenders = {f: [m for m in found if m.startswith("gpurepro.analyze")]
                 for f, found in _gpurepro_imports("run").items()}
    assert not {f: m for f, m in offenders.items() if m}, offenders


def test_the_model_imports_only_itself_and_the_errors():
    """gpurepro.model is the ground floor: every stage imports it, it imports no stage."""
    offenders = {f: [m for m in found if not m.startswith(("gpurepro.model", "gpurepro.errors"))]
                 for f, found in _gpurepro_imports("model").items()}
    assert not {f: m for f, m in offenders.items() if m}, offenders


def test_the_report_reads_no_manifest():
    """A report is a function of its document: report/ never loads a case from a checkout
    (what the comment needs of the manifest, its targets, the record keeps)."""
    offenders = {f: [m for m in found if m.startswith("gpurepro.case.load")]
                 for f, found in _gpurepro_imports("report").items()}
    assert not {f: m for f, m in offenders.items() if m}, offenders


# Imports of gpurepro modules inside functions: only where the module imported needs an
# optional heavy dependency (numpy, scipy, jsonschema, pyelftools) that the importing module's
# other callers run without (the run stage on a GPU node, a command's other stages), or where
# the file also runs alone as a script (case/instruments.py). Each is listed; a new one is a
# choice to make here, not a way around an import cycle.
IMPORTS_INSIDE_FUNCTIONS = {
    "analyze/designing.py": 2,  # planning: numpy, scipy (a fixed-size run plans without them)
    "building/elf_analysis.py": 2,  # elf: pyelftools (a manifest declares it on a GPU node)
    "case/instruments.py": 2,  # also the wrapper script, run alone
    "cli/bisect.py": 1,  # sweep.assemble: scipy (the GPU stage runs without it)
    "cli/matrix.py": 2,  # sweep.collect (pyelftools), sweep.assemble (scipy)
    "cli/record.py": 1,  # report.markdown: scipy, after a record that had the packages
    "cli/run.py": 1,  # analyze.allocation: scipy, only for a design that decides as it runs
    "cluster/submit.py": 1,  # analyze.claims: scipy, likewise
    "record/result.py": 1,  # record.document: jsonschema, scipy (said in one line without them)
    "sweep/timed.py": 1,  # analyze.timing: scipy (a node without it cannot decide that point)
}


def _inside_functions(path):
    import ast

    tree = ast.parse(path.read_text(), str(path))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            found |= {id(n) for n in ast.walk(node) if isinstance(n, ast.ImportFrom)
                      and (n.level or (n.module or "").startswith("gpurepro"))}
    return len(found)


def test_modules_are_imported_at_the_top():
    found = {str(p.relative_to(SRC)): _inside_functions(p) for p in _python_files(SRC)
             if "template" not in p.relative_to(SRC).parts}
    found = {f: n for f, n in found.items() if n}
    assert found == IMPORTS_INSIDE_FUNCTIONS
    assert sum(found.values()) <= 15


def _module_imports() -> dict[str, set[str]]:
    """Each gpurepro module -> the gpurepro modules it imports (at any depth of its code,
    TYPE_CHECKING included: a reader follows those too), leaving out a module's own packages
    (a package's face imports its modules, which import their siblings through it)."""
    import ast

    names = {}
    for path in SRC.rglob("*.py"):
        parts = path.relative_to(SRC.parent).with_suffix("").parts
        names[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph: dict[str, set[str]] = {}
    for name, path in names.items():
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)] \
                    if node.level else []
                target = ".".join([*base, *([node.module] if node.module else [])])
                found |= {t for t in (target, *(f"{target}.{a.name}" for a in node.names))
                          if t in names}
            elif isinstance(node, ast.Import):
                found |= {a.name for a in node.names if a.name in names}
        graph[name] = {t for t in found if t != name and not name.startswith(t + ".")}
    return graph


def test_no_two_modules_import_each_other_round_a_circle():
    """Issue 47: no circle of imports (the structure tool's circles), so each module can be
    read after the ones it uses."""
    graph = _module_imports()
    done: set[str] = set()

    def circle_from(start: str) -> list[str] | None:
        stack, on = [(start, iter(sorted(graph[start])))], [start]
        while stack:
            node, rest = stack[-1]
            nxt = next(rest, None)
            if nxt is None:
                stack.pop()
                on.pop()
                done.add(node)
            elif nxt in on:
                return [*on[on.index(nxt):], nxt]
            elif nxt not in done:
                stack.append((nxt, iter(sorted(graph[nxt]))))
                on.append(nxt)
        return None

    for module in sorted(graph):
        if module not in done:
            circle = circle_from(module)
            assert circle is None, " -> ".join(circle)


def test_no_cases_verdict_py_runs_past_100_lines():
    """Issue 48: cases declare, the harness concludes; what a verdict.py still programs stays
    short (non-blank lines)."""
    long = {p.parent.name: n for p in (ROOT / "cases").glob("*/verdict.py")
            if (n := sum(1 for line in p.read_text().splitlines() if line.strip())) > 100}
    assert long == {}
