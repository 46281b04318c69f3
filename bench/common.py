"""Shared by the benchmarks: the bench document, its pyperf twin, medians and spreads.

Each benchmark measures a ratio side by side in one run (interleaved repetitions) and writes
``results/bench/<name>_<UTC stamp>.json`` (schema/bench.schema.json) plus a pyperf suite of
its samples. On a GPU node without jsonschema/pyperf, the document is written unvalidated;
``python bench/common.py finish DOC`` validates it and adds the pyperf suite where they exist.
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
        import pyperf
    except ImportError:
        return
    benches = []
    for label, values in doc["samples"].items():
        if not values:
            continue
        runs = [pyperf.Run([v], metadata={"name": f"{doc['name']}/{label}", "unit": doc["unit"]},
                           collect_metadata=False) for v in values]
        benches.append(pyperf.Benchmark(runs))
    perf = path.with_name(path.stem + ".pyperf.json")
    if perf.exists():
        perf.unlink()
    pyperf.BenchmarkSuite(benches).dump(str(perf))


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "finish":
        for p in sys.argv[2:]:
            finish(Path(p))
            print(f"ok {p}")
    else:
        print("usage: python bench/common.py finish DOC...")
        sys.exit(2)
