"""Shared by the benchmarks: the bench document, its pyperf suite, medians and spreads.

Each benchmark measures a ratio side by side in one run (interleaved repetitions) and writes
``results/bench/<name>_<UTC stamp>.json`` (schema/bench.schema.json) plus its timings as a pyperf
suite (``<name>_<stamp>.pyperf.json``): one pyperf benchmark per configuration, one run per
repetition, each run carrying the metadata pyperf compares by (date, Python, CPU, OS, the
benchmark's parameters, the commit), so ``python -m pyperf compare_to A.pyperf.json
B.pyperf.json`` sets two runs of one benchmark side by side and says whether each difference is
significant, and ``pyperf stats`` / ``pyperf metadata`` read one. pyperf's test is Student's
t-test on equal numbers of values: two suites of one benchmark measured with different
repetitions (the committed loop_rate runs: 5 and 3) or with one repetition per configuration
(time_to_verdict: one run of a case each) get "ERROR when testing if values are significant"
from it, however the suite is written, and no value can be added to them.
``python bench/common.py compare A.json B.json`` compares the documents themselves: each
configuration's median, the ratio, and Welch's t-test on the logarithms of the repetitions,
which takes unequal numbers, where both have two or more. The timings are wall-clock
seconds of whole processes from ``time.perf_counter`` (pyperf's own clock), not pyperf.Runner's
worker loops, which are made for microbenchmarks. On a GPU node without jsonschema/pyperf the
document is written unvalidated; ``python bench/common.py finish DOC`` validates it and writes
the suite where they exist.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from gpurepro.env import fingerprint as envmod  # noqa: E402


def median(values: list[float]) -> float:
    """The one median every benchmark uses, for its ratio and its summary alike."""
    return statistics.median(values)


def summary(values: list[float]) -> dict[str, Any]:
    values = sorted(values)
    return {"n": len(values), "median": median(values), "min": values[0],
            "max": values[-1],
            "stdev": statistics.stdev(values) if len(values) > 1 else 0.0}


def document(name: str, question: str, parameters: dict[str, Any], samples: dict[str, list[float]],
             unit: str, ratio: dict[str, Any], goal: dict[str, Any], notes: list[str]) -> dict[str, Any]:
    met = {">=": ratio["value"] >= goal["value"], "<=": ratio["value"] <= goal["value"]}[goal["op"]]
    if "or" in goal:  # an alternative goal on another quantity (e.g. "<= 20 ms")
        alt = goal["or"]
        met = met or {">=": alt["measured"] >= alt["value"], "<=": alt["measured"] <= alt["value"]}[alt["op"]]
    return {
        "schema": "gpurepro/bench/1",
        "name": name,
        "question": question,
        "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "environment": envmod.fingerprint(ROOT, redact=True),
        "parameters": parameters,
        "unit": unit,
        "samples": samples,
        "summary": {k: summary(v) for k, v in samples.items() if v},
        "ratio": ratio,
        "goal": goal,
        "met": met,
        "notes": notes,
    }


def write(doc: dict[str, Any], out_dir: Path) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    stamp = doc["created_at"].replace("-", "").replace(":", "")
    path = out_dir / f"{doc['name']}_{stamp}.json"
    path.write_text(json.dumps(doc, indent=1) + "\n")
    finish(path)
    print(f"{doc['name']}: ratio {doc['ratio']['name']} = {doc['ratio']['value']:.4g} "
          f"(goal {doc['goal']['op']} {doc['goal']['value']}): {'met' if doc['met'] else 'NOT met'}")
    print(f"wrote {path}")
    return path


def run_metadata(doc: dict[str, Any], label: str) -> dict[str, Any]:
    """The metadata of each pyperf run of one configuration: what pyperf itself records where
    it can (date, python_version, cpu_count, cpu_model_name, platform, hostname), from the
    document's own fingerprint (the machine that measured, not the one writing the suite), and
    the benchmark's parameters and commit."""
    env = doc.get("environment") or {}
    host = env.get("host") or {}
    gpus = (env.get("gpu") or {}).get("gpus") or []
    meta: dict[str, Any] = {
        "name": f"{doc['name']}/{label}",
        "unit": doc["unit"],
        "date": doc["created_at"].replace("T", " ").rstrip("Z"),
        "loops": 1,
        "description": doc["question"],
    }
    if host.get("python"):
        meta["python_version"] = str(host["python"])
    if isinstance(host.get("cpu_count"), int):
        meta["cpu_count"] = host["cpu_count"]
    if host.get("cpu"):
        meta["cpu_model_name"] = str(host["cpu"])
    if host.get("os") or host.get("kernel"):
        meta["platform"] = f"{host.get('os')}, Linux {host.get('kernel')}"
    if host.get("hostname"):
        meta["hostname"] = str(host["hostname"])  # "redacted" in committed documents
    if gpus:
        meta["gpu"] = ", ".join(sorted({str(g.get("name")) for g in gpus}))
        driver = (env.get("gpu") or {}).get("driver_version")
        if driver:
            meta["gpu_driver"] = str(driver)
    commit = (env.get("repository") or {}).get("commit")
    if commit:
        meta["gpurepro_commit"] = str(commit)
    for key, value in sorted((doc.get("parameters") or {}).items()):
        if isinstance(value, (str, int, float)) and not isinstance(value, bool):
            meta[f"param_{key}"] = value if not isinstance(value, str) else value[:200]
    return meta


def pyperf_suite(doc: dict[str, Any]) -> Any:
    """The document's samples as a pyperf suite: a benchmark per configuration, a run per
    repetition (one value each: a repetition is one measurement), every run with the metadata
    of ``run_metadata``."""
    import pyperf

    benches = []
    for label, values in doc["samples"].items():
        if not values:
            continue
        meta = run_metadata(doc, label)
        benches.append(pyperf.Benchmark([pyperf.Run([v], metadata=meta, collect_metadata=False)
                                         for v in values]))
    return pyperf.BenchmarkSuite(benches)


def finish(path: Path) -> None:
    """Validate against the schema and write the pyperf suite, where those packages exist."""
    doc = json.loads(path.read_text())
    try:
        from gpurepro.record.validation import validate_document
    except ImportError:
        print("(jsonschema missing here: validate later with python bench/common.py finish)")
    else:
        validate_document(doc, str(path))
    try:
        import pyperf  # noqa: F401
    except ImportError:
        print("(pyperf missing here: write the suite later with python bench/common.py finish)")
        return
    pyperf_suite(doc).dump(str(path.with_name(path.stem + ".pyperf.json")), replace=True)


def _seconds(value: float) -> str:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9)):
        if abs(value) >= scale:
            return f"{value / scale:.3g} {unit}"
    return f"{value:.3g} s"


def compare(a: dict[str, Any], b: dict[str, Any], alpha: float = 0.05) -> list[str]:
    """Two documents of one benchmark, configuration by configuration: medians, the ratio
    b/a, and Welch's t-test on the log values (unequal numbers of repetitions allowed) where
    both have two or more; a line per configuration, then those only one of them has."""
    import math

    from scipy import stats

    if a["name"] != b["name"]:
        raise ValueError(f"documents of two benchmarks ({a['name']}, {b['name']}): nothing to compare")
    lines = []
    common = [k for k in a["samples"] if a["samples"][k] and b["samples"].get(k)]
    for label in common:
        va, vb = a["samples"][label], b["samples"][label]
        ma, mb = median(va), median(vb)
        ratio = mb / ma
        change = f"{ratio:.3f}x " + ("slower" if ratio > 1 else "faster" if ratio < 1 else "the same")
        text = (f"{a['name']}/{label}: {_seconds(ma)} ({len(va)} reps) -> {_seconds(mb)} "
                f"({len(vb)} reps): {change}")
        if len(va) >= 2 and len(vb) >= 2:
            res = stats.ttest_ind([math.log(v) for v in va], [math.log(v) for v in vb],
                                  equal_var=False)
            p = float(res.pvalue)
            verdict = "significant" if p < alpha else "not significant"
            text += f"; {verdict} (Welch's t on log values, p = {p:.2g})"
        else:
            text += "; one repetition on a side: no test (a difference of two values is not a test)"
        lines.append(text)
    for doc, other, which in ((a, b, "first"), (b, a, "second")):
        only = [k for k in doc["samples"] if doc["samples"][k] and not other["samples"].get(k)]
        if only:
            lines.append(f"only in the {which}: " + ", ".join(f"{doc['name']}/{k}" for k in only))
    return lines


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "finish":
        for p in sys.argv[2:]:
            finish(Path(p))
            print(f"ok {p}")
    elif len(sys.argv) == 4 and sys.argv[1] == "compare":
        try:
            docs = [json.loads(Path(p).read_text()) for p in sys.argv[2:]]
            for line in compare(*docs):
                print(line)
        except (OSError, ValueError, KeyError) as exc:
            print(f"compare: {exc}", file=sys.stderr)
            sys.exit(2)
    else:
        print("usage: python bench/common.py finish DOC... | compare A.json B.json")
        sys.exit(2)
