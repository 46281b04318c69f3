"""A result document -> the body of a GitHub issue comment.

The head, before any fold, fits one screen (at most ``HEAD_LIMIT`` characters for the committed
documents, which a test holds): the verdict headline, whether the report reproduced as filed,
the owner and the workaround where a decided claim supports one, the crash signature (or the
wrong-result summary, or the most frequent CUDA error), a partial run said to be partial, what
was not run (the reporter's GPU, target and driver where this run had others, the arms beyond
the main question, the claims not decided) and the shortest rerun. Everything else folds into
``<details>`` blocks: the arms table, the owner and workaround with the claims they rest on,
the hypotheses, the full rerun steps (clone, checkout, the nox command, the same without nox:
gpurepro.report.rerun), the environment and attachments, the verdict in full, claims, crash
sites, threads, analyses. What only restates the run (the GPU's UUID and PCI bus id, NCCL
variables of a one-GPU run, the upstream link back to the issue itself) is left out. Numbers are
written plainly (131,000, not 1.31e+05: numbers.plain), and the exposure unit by what it counts
where the case says (``Exposure.label``). GitHub refuses a comment over 65,536 characters: the
details are cut to fit, with a note, never the head.

A command the comment prints is one the case accepts: an ``--arch`` only for a target the case
builds (its manifest, where this checkout has the case), and next steps that advise what is
committed beside the document (a bisection) are said to be done instead.

Every string that comes from the document goes through ``tables.escape``, the one escaping
function of the reports, in the context it goes into (text, the verdict's prose, a code span,
the HTML of a ``<summary>``, an analysis's Markdown), whether in a table, a bullet or a
sentence; the crash signature is a code span no string of it can close, and the rerun lines
are all the harness's, each document word shell-quoted on one line.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..analyze.stats import coarse_counter
from ..env.commits import committed_as_is
from ..errors import IssueError
from ..model.result import ArmSummary, Estimate, Reported, Result, Verdict, as_result
from ..project import repository_url
from . import families, gfm, timed
from .markdown import (
    claims_table,
    environment_rows,
    python_frames_table,
    resumes,
    runtime_rows,
    threads_table,
)
from .numbers import fmt_ci, fmt_p, per_label, plain, plain_text
from .rerun import rerun_arguments, rerun_section, session_for, shortest_rerun
from .survival import draws_survival
from .tables import code, escape, fence, table
from .wrong import head_lines as wrong_head
from .wrong import per_trial

__all__ = ["LIMIT", "issue_body", "read_result", "rerun_arguments", "session_for"]

LIMIT = 65_536  # GitHub's limit on an issue comment, in characters
ARMS_IN_HEAD = 40  # more arms than this go to a <details> block of their own
HEAD_LIMIT = 2_500  # characters before the first <details>: one screen of a GitHub comment
# How long each of the head's sentences from the document may be before it is cut (with "…",
# the whole of it in the folds below).
QUOTE_CHARS, OWNER_CHARS, STEP_CHARS = 480, 420, 260

# ---------------------------------------------------------------- the head


def _code(value: object) -> str:
    """A document string as one code span (tables.escape's "code")."""
    return code(value)


def _text(value: object) -> str:
    """A document string of the verdict's prose (its code spans kept), its large numbers
    written plainly, escaped (tables.escape's "prose")."""
    return escape(plain_text(str(value)), "prose")


def first_sentence(text: str, limit: int) -> str:
    """A text's first sentence, cut at a clause boundary to at most ``limit`` characters with
    "…" where it was longer, never inside a code span."""
    first = re.split(r"(?<=[a-z0-9)\]])\. (?=[A-Z])", " ".join(text.split()), maxsplit=1)[0]
    if len(first) <= limit:
        return first
    cut = first[:limit]
    at = max(cut.rfind("; "), cut.rfind(", "), cut.rfind(": "))
    cut = cut[:at] if at > limit // 2 else cut[: cut.rfind(" ")]
    if cut.count("`") % 2:
        cut = cut[: cut.rindex("`")].rstrip()
    return cut.rstrip(",;: ") + " …"


def gist(value: object, limit: int) -> str:
    """A document sentence for the head (``first_sentence``), its numbers plain, escaped as
    prose."""
    return escape(first_sentence(plain_text(str(value)), limit), "prose")


def exposure_unit(r: Result) -> str:
    """The exposure unit by what it counts ("load/launch/unload iterations") where the case
    says, else its name ("cycles")."""
    return r.case.exposure_words


def unit_note(r: Result) -> list[str]:
    """A line saying what the verdict's unit counts, where the case names it in words."""
    label, unit = r.case.exposure_label, str(r.case.exposure_unit)
    if not label or label == unit:
        return []
    clock = ", not clock cycles" if "cycle" in unit.lower() else ""
    return [f"_In the sentences quoted here, \"{escape(unit)}\" counts {escape(label)} (the case's "
            f"{_code(r.case.exposure_counter)} counter){clock}._", ""]


def environment_line(doc: Result | Mapping[str, Any]) -> str:
    r = as_result(doc)
    gpu = r.environment.gpu
    if gpu.gpus:
        names = ", ".join(sorted({escape(g.name) for g in gpu.gpus}))
        ccs = ", ".join(sorted({escape(g.compute_capability) for g in gpu.gpus}))
        where = f"{names} × {len(gpu.gpus)}, compute capability {ccs}"
    else:
        where = f"no GPU ({escape(gpu.reason or 'none found')})"
    if r.cluster:
        where = (f"{r.cluster.nodes} Slurm node(s) in partition(s) "
                 f"{', '.join(escape(p) for p in r.cluster.partitions)}: {where}")
    driver = escape(gpu.driver_version or "–")
    api = f" (CUDA driver API {escape(gpu.cuda_driver_api)})" if gpu.cuda_driver_api else ""
    python = (f"; Python {escape(r.environment.host_python)} ran the trials"
              if r.environment.host_python else "")
    line = (f"**Environment:** {where}; driver {driver}{api}; target "
            f"{_code(r.device.target)}{python}.")
    # The journal's device, as the document names it: what a resume compared the device it
    # found against (run/session.resume_device).
    was = {"name": r.device.name, "uuid": r.device.uuid, "driver_version": gpu.driver_version}
    for resumed in (x for x in resumes(r) if x.resume.other_device):
        # Trials that ran elsewhere than the device named above; not its UUID: the comment
        # names no machine (the report's Resumed section does).
        d = resumed.resume.device
        found = {"name": d.name, "uuid": d.uuid, "driver_version": d.driver_version} if d else {}
        what = [key.replace("_", " ") for key, value in was.items()
                if value is not None and found.get(key) != value]
        line += (f" Resumed with `--other-device` at {escape(resumed.resume.at)}: "
                 f"{len(resumed.trials)} trial(s) "
                 f"ran on {escape(found.get('name'))}, driver {escape(found.get('driver_version'))}, "
                 f"whose {escape(', '.join(what) or 'device')} differ(s) from the journal's.")
    return line


def _verdict(r: Result) -> Verdict:
    """The run's verdict (issue_body refuses a document without one)."""
    assert r.verdict is not None
    return r.verdict


def _claim_refs(r: Result, names: Sequence[str]) -> str:
    decisions = r.analysis.claims
    return ", ".join(f"{_code(name)} ({escape(families.decision_text(decisions[name]))}, "
                     f"p {fmt_p(decisions[name].p_value)})" if name in decisions else _code(name)
                     for name in names)


def owner_bullet(r: Result) -> str:
    verdict = _verdict(r)
    owner = verdict.owner
    if not owner:
        why = next((s for s in verdict.next if "owner" in s.lower()), None)
        return ("**Owner:** none named: no decided claim points to one"
                + (f". {_text(why)}" if why else "."))
    because = verdict.owner_because
    if because is None or not r.claims_recorded:
        return (f"**Owner:** {_text(owner)}. (This document was recorded before the harness "
                f"decided claims: the owner rests on the measurements, not on recorded decisions.)")
    rest = _claim_refs(r, because)
    return (f"**Owner:** {_text(owner)}. "
            + (f"It rests on the decided claims {rest}." if rest else "It rests on no decided claim."))


_CLAIM_IN = re.compile(r"\(claim ([A-Za-z0-9_.-]+)\)")


def workaround_bullet(r: Result) -> str | None:
    """The verdict's workaround, where a decided confirmatory claim supports it: a next step that offers a
    workaround and names its claim, "(claim NAME)", with that claim supported."""
    decisions = r.analysis.claims
    for text in _verdict(r).next:
        named = _CLAIM_IN.search(text)
        if "workaround" not in text.lower() or not named:
            continue
        claim = decisions.get(named.group(1))
        if not claim or claim.decision != "supported" or families.is_exploratory(claim):
            continue  # a workaround rests on a confirmatory decision
        what = text[named.end():].lstrip(": ") or text
        first = what[: what.index(". ") + 1] if ". " in what else what  # the rest: Next steps
        return (f"**Workaround:** {_code(claim.arm)}: {_text(first)} (claim "
                f"{_code(claim.name)} supported, p {fmt_p(claim.p_value)})")
    return None


_HYPOTHESIS = re.compile(r"^Hypothesis \(([^)]*)\):\s*(.*)$", re.S)


def hypothesis_gist(text: str) -> str:
    """A hypothesis in one clause: its statement up to where the evidence for it begins, with
    the qualifier it carries (how far the run bounds it)."""
    m = _HYPOTHESIS.match(text.strip())
    qualifier, rest = (m.group(1), m.group(2)) if m else (None, text.strip())
    ends = [i for i in (rest.find(": "), rest.find(". ")) if i > 0]
    gist = rest[: min(ends)] if ends else rest.rstrip(".")
    return _text(gist) + (f" ({_text(qualifier)})" if qualifier else "")


def hypotheses_bullet(r: Result) -> str | None:
    hypotheses = _verdict(r).hypotheses
    if not hypotheses:
        return None
    gists = "".join(f"\n  - {hypothesis_gist(h)}" for h in hypotheses)
    return f"**Hypotheses** (no arm of this run isolates them; in full below):{gists}"


def _machine(facts: Reported) -> str:
    """"GPU (target), driver D, toolchain" from what is known of them."""
    text = escape(facts.gpu or "a GPU")
    if facts.target:
        text += f" ({escape(facts.target)})"
    if facts.driver:
        text += f", driver {escape(facts.driver)}"
    if facts.toolchain:
        text += f", {escape(facts.toolchain)}"
    return text


def not_run_bullet(r: Result) -> str | None:
    """What the reporter ran on that this run did not: GPU, target, driver."""
    reported = r.case.reported
    if reported is None:
        return None
    gpu = r.environment.gpu
    names = gpu.names
    here = Reported(gpu=", ".join(names) or "no GPU", target=str(r.device.target),
                    driver=str(gpu.driver_version or "–"))
    same = {"gpu": reported.gpu in names,
            "target": reported.target == here.target,
            "driver": str(here.driver).startswith(str(reported.driver))}
    differs = [k for k in ("gpu", "target", "driver") if getattr(reported, k) and not same[k]]
    if not differs:
        return "**Not run:** nothing the reporter ran on: this run had their GPU, target and driver."
    line = (f"**Not run:** on what the report was filed from, {_machine(reported)}: this run "
            f"had {_machine(here)}.")
    if "target" in differs and reported.target:
        line += " " + as_filed_build(r, str(reported.target))
    return line


def case_targets(r: Result) -> set[str] | None:
    """The build targets of the document's case (``case.targets``, kept from its run's
    manifest); None for a document recorded before they were kept, unless the one who reads
    it added them (gpurepro.record.result.with_checkout_facts)."""
    targets = r.case.targets
    return None if targets is None else set(targets)


def as_filed_build(r: Result, target: str) -> str:
    """The command that builds the reporter's target, where the case builds it; else why not."""
    targets = case_targets(r)
    if targets is None:
        return "(this checkout has not the case, to say which command builds that target)."
    if target not in targets:
        return (f"The case builds no {_code(target)} target "
                f"({', '.join(_code(t) for t in sorted(targets))}).")
    command = f"nox -s {session_for(r.case.name)} -- --arch {target}"
    return f"{_code(command)} builds the as-filed artifacts for a rerun there."


def deeper_bullet(r: Result) -> str | None:
    """A main-question run: the arms and claims beyond it, and the command that runs them."""
    deeper = r.case.deeper
    if deeper is None:
        return None
    claims = deeper.claims
    command = f"nox -s {session_for(r.case.name)} -- --deep"
    return (f"**Beyond the main question:** this run answered the report's own questions; "
            f"{len(deeper.arms)} more arm(s) ({', '.join(_code(a) for a in deeper.arms)}) "
            f"would decide {len(claims)} more claim(s) of mechanism and detail"
            + (f" ({', '.join(_code(c) for c in claims)})" if claims else "")
            + f": {_code(command)} runs every arm, the main question's first.")


def _stopped(r: Result) -> str | None:
    return r.verdict.stopped if r.verdict else None


def partial_bullet(r: Result) -> str | None:
    stopped = _stopped(r)
    return f"**Partial result:** {_text(stopped)}" if stopped else None


def not_decided_bullet(r: Result) -> str | None:
    # The confirmatory family's: an exploratory claim left undecided is listed with its family.
    undecided = [c.name for c in families.confirmatory(r.claims) if c.decision == "not_decided"]
    if not undecided:
        return None
    return (f"**Not decided:** {', '.join(_code(n) for n in undecided)} (each says below how "
            f"much more exposure would decide it).")


def _rate_cell(s: ArmSummary, coarse: int, trials: bool = False) -> str:
    if s.n_valid == 0:
        return "–"
    if trials:  # a case that checks its output: the share of failing trials
        prop = s.proportion
        return f"{plain(prop.estimate)} {_ci(prop.ci95)}"
    if s.exposure.total <= 0 or coarse:
        why = "coarse counter" if coarse else "no exposure"
        return f"– ({why}; {share_words(s.proportion)})"
    rate = s.exposure.rate
    return f"{plain(rate.estimate)} {_ci(rate.ci95)}"


def share_words(prop: Estimate) -> str:
    """A share of failing trials in words: "every trial failed", "none failed", "40% of
    trials failed (95% CI 12–74%)"."""
    estimate, ci = prop.estimate, prop.ci95 or (None, None)
    if estimate is None:
        return "no trial to count"
    if estimate >= 1:
        return "every trial failed"
    if estimate <= 0:
        return "no trial failed"
    lo, hi = (f"{100 * x:.0f}" if x is not None else "?" for x in ci)
    return f"{100 * estimate:.0f}% of trials failed (95% CI {lo}–{hi}%)"


def valid_cell(s: ArmSummary) -> str:
    """failed / valid, or in words why no trial counts ("none valid: 3 hung")."""
    if s.n_valid:
        return f"{s.failures} / {s.n_valid}"
    outcomes = s.outcomes
    if not outcomes:
        return "not run"
    return "none valid: " + escape(", ".join(f"{v} {k.replace('_', ' ')}"
                                             for k, v in sorted(outcomes.items())))


def rate_heading(r: Result) -> str:
    """The rate column's heading: per 10^6 of the unit, or per one of it in words."""
    if per_trial(r):
        return "share of failing trials (95% CI)"
    per, unit = r.case.exposure_per, escape(exposure_unit(r))
    if per == 1:
        return f"failures / {unit} (95% CI)"
    return f"failures per {escape(per_label(per if per is not None else 0))} {unit} (95% CI)"


def _ci(ci: Sequence[float | None] | None) -> str:
    if not ci:
        return fmt_ci(None)
    lo, hi = ci
    return f"[{plain(lo)}, {plain(hi) if hi is not None else '∞'}]"


def _coarse(r: Result) -> dict[str, int]:
    failures = r.case.failure_outcomes
    out: dict[str, int] = {}
    for arm in r.arms:
        failed = [t.record for t in r.trials if t.arm == arm and t.outcome in failures]
        out[arm] = coarse_counter(failed)
    return out


def arms_table(r: Result, limit: int | None = ARMS_IN_HEAD) -> tuple[str, int]:
    """The short arms table (at most ``limit`` arms) and how many arms it left out."""
    summary = r.arms
    if not any(s.n_valid for s in summary.values()):
        outcomes: Counter[str] = Counter()
        for s in summary.values():
            outcomes.update(s.outcomes)
        what = ", ".join(f"{n} {escape(k)}" for k, n in sorted(outcomes.items()))
        return (f"No arm ran a valid trial ({len(summary)} arms; {what}): nothing to measure "
                f"here.\n", 0)
    coarse = _coarse(r)
    baseline = r.case.baseline
    rows = []
    arms = list(summary)
    shown = arms if limit is None else arms[:limit]
    if timed.is_timed(r):  # times and their ratios, not failure rates, answer its question
        heads, timing = timed.arms_rows(r, shown)
        rows = [[_code(a), valid_cell(summary[a]), _rate_cell(summary[a], coarse[a], True), *t]
                for a, t in zip(shown, timing, strict=True)]
        lines = table(["arm", "failed / valid", "share of failing trials (95% CI)", *heads], rows)
        return "\n".join([*lines, ""]), len(arms) - len(shown)
    for arm in shown:
        s = summary[arm]
        comparison = r.comparisons.get(arm)
        rr = comparison.rate_ratio if comparison else None
        p = comparison.rate_ratio_p if comparison else None
        meaningful = (not coarse[arm] and not coarse.get(baseline) and not per_trial(r)
                      and p is not None)
        estimate = plain(rr.estimate) if rr is not None and rr.estimate is not None else "∞"
        ratio = ([f"{estimate} {_ci(rr.ci95 if rr else None)}", fmt_p(p)]
                 if meaningful else (["(baseline)", "–"] if arm == baseline else ["–", "–"]))
        valid = valid_cell(s)
        rows.append([_code(arm), valid, _rate_cell(s, coarse[arm], per_trial(r)), *ratio])
    lines = table(["arm", "failed / valid", rate_heading(r),
                   f"rate ratio vs {_code(baseline)} (95% CI)", "p"], rows)
    lines.append("")
    return "\n".join(lines), len(arms) - len(shown)


def crash_signature(r: Result) -> list[str]:
    sites = r.crash_sites
    if not sites:
        errors: Counter[str] = Counter()
        for t in r.trials:
            if t.outcome == "cuda_error":
                errors[f"{t.detail}" + (f" at {t.call}" if t.call else "")] += 1
        if errors:
            error, n = errors.most_common(1)[0]
            return [f"No crash recorded; the most frequent CUDA error: {_code(error)} ({n} trials)."]
        return ["No crash recorded."]
    top = sites[0]
    crashes = sum(b.count for b in sites)
    fault = top.fault_module
    arms = ", ".join(f"{_code(a)} {n}" for a, n in sorted(top.arms.items()))
    # The signature is the crash record's, which a driver writes: a fence it cannot close.
    out = [*fence(" ".join(str(top.signature).splitlines())),
           f"{top.count} of {crashes} crashes ({arms})"
           + (f"; signal code {escape(top.code_name)}" if top.code_name else "")
           + (f"; faulting address in {escape(fault)}" if fault else "")
           + (f"; {len(sites) - 1} other site(s) in the details below" if len(sites) > 1 else "")
           + "."]
    return out


def has_plot(r: Result) -> bool:
    """Whether `report` draws the survival plot for this document (survival.plot's own test)."""
    return draws_survival(r)


def act_on(r: Result, extra: Sequence[str] = ()) -> list[str]:
    """The bullets in full, as the "Owner, workaround and what is open" fold gives them;
    ``extra`` (the toolchain matrix's line) goes after the hypotheses."""
    bullets = [partial_bullet(r), owner_bullet(r), workaround_bullet(r),
               hypotheses_bullet(r), *extra, not_run_bullet(r), deeper_bullet(r),
               not_decided_bullet(r)]
    return [f"- {b}" for b in bullets if b]


def as_filed_bullet(r: Result) -> str:
    """Whether the report reproduced as filed: the decision on the arm that runs the reporter's
    program unchanged (``as-filed``) where the case has one, else what the case's arms found
    (the verdict's status); and where the reporter's machine was not this one."""
    claim = next((c for c in families.confirmatory(r.claims) if c.arm == "as-filed"), None)
    if claim is not None:
        word = {"supported": "yes", "contradicted": "no"}.get(claim.decision, "not decided")
        line = (f"**Reproduced as filed:** {word}: the reporter's program unchanged "
                f"({_code('as-filed')}), claim {_code(claim.name)} "
                f"{escape(families.decision_text(claim))}, p {fmt_p(claim.p_value)}")
    else:
        status = _verdict(r).status.replace("_", " ")
        line = (f"**Reproduced as filed:** the case has no arm of the reporter's program "
                f"unchanged; what it reports, rebuilt in the case's arms: {escape(status)}")
    reported = r.case.reported
    names = r.environment.gpu.names
    if reported and reported.gpu and reported.gpu not in names:
        line += f", on {escape(', '.join(names) or 'no GPU')}, not the reporter's GPU"
    return line + "."


def owner_head(r: Result) -> str:
    """The owner in one sentence, with how many decided claims it rests on (listed in full in
    the fold)."""
    verdict = _verdict(r)
    owner = verdict.owner
    if not owner:
        why = next((s for s in verdict.next if "owner" in s.lower()), None)
        return "**Owner:** none named: no decided claim points to one" + (
            f" ({gist(why, OWNER_CHARS // 2)})." if why else ".")
    because = verdict.owner_because
    rests = (f" (rests on {len(because)} decided claim{'s' if len(because) != 1 else ''}, "
             f"below)" if because else "")
    return f"**Owner:** {gist(owner, OWNER_CHARS)}{rests}."


def workaround_head(r: Result) -> str | None:
    full = workaround_bullet(r)
    if full is None:
        return None
    return full if len(full) <= STEP_CHARS + 120 else (
        full[: full.index(": ", len("**Workaround:** ")) + 2] + "see below.")


def signature_head(r: Result) -> str:
    """The failure in one bullet: the top crash site (a code span), the wrong answers, or the
    most frequent CUDA error."""
    wrong = wrong_head(r)
    if wrong:
        return "**Wrong results:** " + wrong[2]
    sites = r.crash_sites
    if not sites:
        return "**Crash signature:** " + crash_signature(r)[0]
    top = sites[0]
    crashes = sum(b.count for b in sites)
    signature = " ".join(str(top.signature).split())
    code_name = f", {escape(top.code_name)}" if top.code_name else ""
    others = f"; {len(sites) - 1} other site(s) below" if len(sites) > 1 else ""
    return (f"**Crash signature:** {_code(signature)} ({top.count} of {crashes} "
            f"crashes{code_name}{others}).")


def partial_head(r: Result) -> str | None:
    stopped = _stopped(r)
    if stopped:
        return f"**Partial run:** {gist(stopped, STEP_CHARS)}"
    if partial(r):
        ran, planned = ran_of_planned(r)
        return (f"**Partial run:** {ran} of {planned} planned trials ran before the run stopped; "
                f"the verdict rests on those.")
    return None


def not_run_head(r: Result) -> str | None:
    """What this run did not do, each in a clause: the reporter's machine, the deeper arms,
    the claims left undecided."""
    parts = []
    reported = r.case.reported
    names = r.environment.gpu.names
    if reported and reported.gpu and reported.gpu not in names:
        part = f"the reporter's {_machine(reported)}"
        if reported.target and reported.target != r.device.target:
            part += " — " + as_filed_build(r, str(reported.target)).rstrip(".")
        parts.append(part)
    deeper = r.case.deeper
    if deeper is not None:
        command = f"nox -s {session_for(r.case.name)} -- --deep"
        parts.append(f"{len(deeper.arms)} arms of mechanism and detail ({_code(command)})")
    undecided = [c for c in families.confirmatory(r.claims) if c.decision == "not_decided"]
    if undecided:
        parts.append(f"{len(undecided)} claim(s) left undecided (below)")
    if not parts:
        return "**Not run:** nothing of the design: every arm ran and every claim was decided."
    return "**Not run:** " + "; ".join(parts) + "."


def rerun_head(r: Result, url: str | None) -> list[str]:
    return ["**Rerun:**", *fence("\n".join(shortest_rerun(r, url)), "sh")]


def _attachable(picture: Path) -> bool:
    """A picture to attach: there, and not empty (a report cut short leaves none, but a copy
    may)."""
    return picture.is_file() and picture.stat().st_size > 0


def attachments(r: Result, path: Path) -> str:
    stem = path.with_suffix("")
    attach = [f"{_code(path.name)} (the result document; {_code('gpurepro report ' + path.name)} "
              f"regenerates the full report from it)"]
    if _attachable(path.parent / f"{stem.name}.times.png"):
        attach.append(f"{_code(stem.name + '.times.png')} (every arm's trial times against the "
                      f"baseline's, with each ratio and claim)")
    if _attachable(path.parent / f"{stem.name}.forest.png"):
        attach.append(f"{_code(stem.name + '.forest.png')} (failure rate per arm against the "
                      f"baseline, with each claim's decision)")
    if _attachable(path.parent / f"{stem.name}.forest-per-gpu.png"):
        attach.append(f"{_code(stem.name + '.forest-per-gpu.png')} (the same, one panel per GPU)")
    if has_plot(r):
        attach.append(f"{_code(stem.name + '.png')} (Kaplan–Meier survival per arm)")
    return "**Attachments:** " + " and ".join(attach) + "."


def how_it_ended(r: Result) -> str:
    """How the run's trials came to an end: its design, or a stop before it."""
    if partial(r):
        ran, planned = ran_of_planned(r)
        return (f"stopped after {escape(ran)} of {escape(planned)} planned trials, before its "
                f"design ended it: a partial run.")
    if r.design.sequential:
        return "stopped arm by arm once their claims were decided."
    return "a fixed number per arm."


def ran_of_planned(r: Result) -> tuple[int, int]:
    completion = r.completion
    if completion.trials is not None and completion.planned is not None:
        return completion.trials, completion.planned
    return len(r.trials), len(r.plan.order)


def partial(r: Result) -> bool:
    """Whether the run stopped before its design ended it: as its completion record says, or,
    in a document from before that record, a sequential run with planned trials left and
    confirmatory claims undecided (its design would have gone on)."""
    if r.completion.complete is not None:
        return r.completion.complete is False
    if not r.design.sequential:
        return False
    ran, planned = ran_of_planned(r)
    cap = r.design.max_trials
    per_arm = Counter(t.arm for t in r.trials)
    # An undecided claim whose arm had trials left under the design's cap: the design would
    # have gone on with it.
    open_arms = [c.arm for c in families.confirmatory(r.claims) if c.decision == "not_decided"
                 and (cap is None or per_arm.get(str(c.arm), 0) < cap)]
    return ran < planned and bool(open_arms)


def head(doc: Result | Mapping[str, Any], path: Path, extra: Sequence[str] = (),
         url: str | None = None) -> str:
    """What fits one screen: the verdict, as filed, owner, workaround, the failure, a partial
    run, what was not run, the shortest rerun (``extra``: the toolchain matrix's line)."""
    r = as_result(doc)
    text = _head(r, path, extra, url, QUOTE_CHARS)
    if len(text) > HEAD_LIMIT:  # a long rerun line: the quoted verdict gives the room
        text = _head(r, path, extra, url, max(QUOTE_CHARS - (len(text) - HEAD_LIMIT), 120))
    if len(text) > HEAD_LIMIT:  # and, at the last, its place ("Verdict in full" is folded below)
        text = _head(r, path, extra, url, 0)
    return text


def failure_heads(r: Result, path: Path) -> list[str | None]:
    """The failure's bullet; for a timed case the times and the committed bisection's
    boundaries, with the failure's bullet only where trials crashed or answered wrong."""
    if not timed.is_timed(r):
        return [signature_head(r)]
    failed = r.crash_sites or wrong_head(r)
    return [signature_head(r) if failed else None, timed.head_bullet(r),
            timed.bisection_bullet(r, path)]


def _head(r: Result, path: Path, extra: Sequence[str], url: str | None,
          quote: int) -> str:
    verdict = _verdict(r)
    sentences = verdict.sentences
    title = f"## gpurepro: {_code(r.case.name)} — {escape(verdict.status.replace('_', ' '))}"
    out = [title + (" (partial run)" if partial(r) else ""), ""]
    if sentences and quote:
        out += [f"> {gist(sentences[0], quote)}", ""]
    bullets = [partial_head(r), as_filed_bullet(r), owner_head(r), workaround_head(r),
               *failure_heads(r, path), *(first_sentence(e, 2 * STEP_CHARS) for e in extra),
               not_run_head(r)]
    out += [f"- {b}" for b in bullets if b]
    out += ["", *rerun_head(r, url),
            "_The arms, the claims, the full rerun steps, the environment and the attachments "
            "are in the folds below._", ""]
    return "\n".join(out)


def arms_block(r: Result) -> str:
    """The arms table with how the trials ran and what the unit counts."""
    where = " per array task and GPU" if r.cluster else ""
    out = [f"{len(r.trials)} trials, shuffled (seed {escape(r.plan.seed)}), "
           f"{escape(r.options.jobs)} at a time{where}; " + how_it_ended(r), ""]
    out += unit_note(r)
    arms, left_out = arms_table(r)
    out.append(arms)
    if left_out:
        out.append(f"({left_out} more arm(s) in the next block.)")
    return "\n".join(out)


def done_beside(path: Path) -> list[str]:
    """The bisection documents committed beside a result (its folder): advice to bisect is
    then advice to do what is done."""
    return sorted(p.name for p in path.parent.glob("bisect_*.json")) if path.parent.is_dir() else []


def next_steps(r: Result, path: Path) -> list[str]:
    """The verdict's next steps less those that advise what is committed beside the document,
    with a line naming what was done instead."""
    steps = list(_verdict(r).next)
    bisections = done_beside(path)
    if not bisections:
        return steps
    kept = [s for s in steps if not re.match(r"\s*(bisect|run a bisection)", s, re.I)]
    if len(kept) < len(steps):
        kept.append(f"A bisection is committed beside this document: {', '.join(bisections)}.")
    return kept


# ---------------------------------------------------------------- the details


def _bullets(items: list[str]) -> str:
    return "\n".join(f"- {_text(s)}" for s in items)


# Rows of the report's environment table the comment leaves out: they name this machine's
# device, not a condition of the run (the GPU's model, memory and driver are kept).
_ROWS_LEFT_OUT = ("GPU UUID / PCI",)
# Labels for the two Pythons the table lists: the trials' interpreter (the fingerprint's) and
# the build's (a toolchain tool).
_ROW_LABELS = {"Python": "Python (ran the trials)", "python": "python (built the artifacts)"}


def environment_table(r: Result) -> list[str]:
    """The environment, toolchain and artifacts, less what only restates this machine."""
    rows = [(_ROW_LABELS.get(label, label), value) for label, value in environment_rows(r)
            if label not in _ROWS_LEFT_OUT]
    gpus = len(r.environment.gpu.gpus)
    variables = [(k, v) for k, v in sorted(r.environment.variables.items())
                 if gpus > 1 or not k.startswith("NCCL_")]  # NCCL matters across GPUs only
    env = table(["", ""], rows)
    if variables:
        env += ["", *table(["variable", "value"], [[_code(k), _code(v)] for k, v in variables])]
    env += ["", *table(["artifact", "sha256"],
                       [[_code(name), _code(a.sha256)] for name, a in sorted(r.artifacts.items())])]
    runtime = runtime_rows(r)
    if runtime:
        env += ["", *table(["arm", "runtime packages requested", "resolved", "left to the node"],
                           runtime)]
    return env


def detail_blocks(doc: Result | Mapping[str, Any], path: Path | None = None,
                  url: str | None = None, extra: Sequence[str] = ()) -> list[tuple[str, str]]:
    """(summary, body) per <details> block, most useful first: the arms, the owner and what is
    open in full, the rerun steps, the environment and attachments, then the rest."""
    r = as_result(doc)
    verdict = _verdict(r)
    path = path or Path(f"{r.case.name}.json")
    blocks: list[tuple[str, str]] = [
        (f"Arms ({len(r.arms)})", arms_block(r)),
        ("Owner, workaround and what is open, with the claims they rest on",
         "\n".join(act_on(r, extra))),
        ("Rerun it: the clone, the commit, the nox command and the same without nox",
         "\n".join(rerun_section(r, url, committed_as_is(path) if path.is_file() else None))),
        ("Environment and attachments", environment_line(r) + "\n\n" + attachments(r, path)),
    ]
    if r.crash_sites:
        blocks.append(("Crash signature in full", "\n".join(crash_signature(r))))
    if verdict.sentences:
        blocks.append((f"Verdict in full ({len(verdict.sentences)} sentences)",
                       _bullets(list(verdict.sentences))))
    if r.claims:
        blocks.append((f"Claims ({families.decided_count(r.claims)})", claims_table(r)))
    elif not r.claims_recorded:
        blocks.append(("Claims", "This document was recorded before the harness decided claims."))
    if verdict.not_decided:
        blocks.append((f"Not decided ({len(verdict.not_decided)})",
                       _bullets(list(verdict.not_decided))))
    if verdict.exploratory:
        blocks.append((f"Exploratory ({len(verdict.exploratory)}; outside the family-wise "
                       f"error rate, no owner rests on them)", _bullets(list(verdict.exploratory))))
    if verdict.hypotheses:
        blocks.append((f"Hypotheses ({len(verdict.hypotheses)}; no arm of this run isolates them)",
                       _bullets(list(verdict.hypotheses))))
    steps = next_steps(r, path)
    if steps:
        blocks.append(("Next steps", _bullets(steps)))
    every_arm, left_out = arms_table(r, limit=None)
    if left_out == 0 and len(r.arms) > ARMS_IN_HEAD:
        blocks.append((f"All {len(r.arms)} arms", every_arm))
    sites = r.crash_sites
    if len(sites) > 1:
        rows = table(["count", "signature", "fault address in", "arms"],
                     [[b.count, _code(b.signature), escape(b.fault_module or "–"),
                       escape(", ".join(f"{a} {n}" for a, n in sorted(b.arms.items())))]
                      for b in sites])
        blocks.append((f"All crash sites ({len(sites)})", "\n".join(rows)))
    failure_outcomes = r.case.failure_outcomes or ("crashed",)
    trials = [t.record for t in r.trials]  # the drivers' records
    threads = threads_table(trials, failure_outcomes)
    if threads:
        blocks.append(("Threads at the crash (the driver call each worker was in, and whether it "
                       "was read at the fault)", "\n".join(threads)))
    python = python_frames_table(trials, failure_outcomes)
    if python:
        blocks.append(("Python frames at the crash (the faulting thread, most recent call first)",
                       "\n".join(python)))
    blocks.append(("Full environment, toolchain and artifacts", "\n".join(environment_table(r))))
    for name, analysis in r.analysis.analyses.items():
        if isinstance(analysis, Mapping) and analysis.get("markdown"):
            blocks.append((f"Analysis: {name}", escape(analysis["markdown"], "markdown")))
    return blocks


def _details(summary: str, body: str) -> str:
    # The summary is inside an HTML block: entities, never Markdown escapes.
    return f"<details><summary>{escape(summary, 'html')}</summary>\n\n{body.rstrip()}\n\n</details>\n"


def _cut(body: str, room: int) -> str:
    """The body cut at a line boundary to at most ``room`` characters, a fence left open
    closed (the renderer's fences, tables.fence: a run of backticks, closed by the same run;
    nothing else in its output starts a line with three backticks)."""
    cut = body[: max(room, 0)]
    if "\n" in cut:
        cut = cut[: cut.rindex("\n")]
    open_run = None
    for line in cut.splitlines():
        run = re.match(r"`{3,}", line)
        if open_run is None and run:
            open_run = run.group(0)
        elif open_run is not None and line.strip() == open_run:
            open_run = None
    return cut + ("\n" + open_run if open_run else "")


def invalid_note(problems: Sequence[str]) -> str:
    """The line under the title of a document that does not validate (`issue --allow-invalid`):
    what is wrong first, in the reports' escaping (a problem quotes the document's values)."""
    count = f"{len(problems)} problem{'s' if len(problems) > 1 else ''}"
    return (f"**This document does not validate** ({count}; `gpurepro validate` lists them): "
            f"its claims, verdict or summaries are not what its trials give, e.g. "
            f"{escape(problems[0])}. Rerun the case, or record its journal again.")


def read_result(doc: Mapping[str, Any], path: Path) -> Result:
    """A document as read, typed for its comment; what is not a case result is said in one
    line (IssueError) before it is typed."""
    if str(doc.get("schema", "")).startswith("gpurepro/bench"):
        raise IssueError(f"{path} is a benchmark document; `issue` takes a case result")
    for key in ("case", "verdict", "summary", "plan", "environment", "toolchain", "device"):
        if not isinstance(doc.get(key), Mapping):
            raise IssueError(f"{path} is not a gpurepro result document (no {key!r})")
    return Result.of(doc)


def issue_body(doc: Result | Mapping[str, Any], path: Path, limit: int = LIMIT,
               extra_blocks: Sequence[tuple[str, str]] = (), extra_head: Sequence[str] = (),
               url: str | None = None, invalid: Sequence[str] = ()) -> str:
    """The comment: the head (``extra_head``: lines for the maintainer's bullets, such as the
    toolchain matrix's), then the <details> blocks (``extra_blocks`` before the environment's)
    as far as ``limit`` allows. ``url``: the repository to clone (default: the project's,
    gpurepro.project.repository_url). ``invalid``: what `validate` finds wrong with the
    document, said under the title."""
    r = doc if isinstance(doc, Result) else read_result(doc, path)
    text = head(r, path, extra_head, repository_url() if url is None else url)
    if invalid:
        title, _, rest = text.partition("\n")
        text = f"{title}\n\n{invalid_note(invalid)}\n{rest}"
    footer = (f"\n_Made by {_code('gpurepro issue ' + path.name)} "
              f"(gpurepro {escape(r.gpurepro_version)})._\n")
    blocks = detail_blocks(r, path, repository_url() if url is None else url, extra_head)
    # Extra blocks (a toolchain matrix) go before the full environment, after the run's own.
    at = next((i for i, (summary, _) in enumerate(blocks) if summary.startswith("Full environment")),
              len(blocks))
    blocks[at:at] = list(extra_blocks)
    left: list[str] = []
    for i, (summary, body) in enumerate(blocks):
        block = _details(summary, body)
        room = limit - len(text) - len(footer)
        if len(block) <= room:
            text += "\n" + block
            continue
        note_room = 400  # the truncation note and the list of blocks left out
        fit = room - len(_details(summary, "")) - note_room
        if fit > 200:
            cut = _cut(body, fit)
            text += "\n" + _details(summary + " (truncated)", cut + (
                f"\n\n_Truncated at {len(cut):,} of {len(body):,} characters to keep this comment "
                f"under GitHub's {limit:,}-character limit; the attached JSON holds all of it._"))
            left = [s for s, _ in blocks[i + 1:]]
        else:
            left = [s for s, _ in blocks[i:]]
        break
    if left:
        text += (f"\n_Left out for length: {'; '.join(escape(s) for s in left)}. The attached JSON holds them "
                 f"(`gpurepro report` renders them)._\n")
    text += footer
    if len(text) > limit:  # a head too long on its own (it never is for committed documents)
        note = "\n\n_Cut at GitHub's comment limit; the attached JSON holds the rest._\n"
        text = _cut(text, limit - len(note) - 4) + note
    # Parsed as GitHub parses it, the comment holds nothing live but its own folds and the
    # case's report link; a document string that would be is refused, not pasted (gfm.py).
    own = {r.case.report_url} if r.case.report_url else set()
    return gfm.check(text, f"{path.name}: the issue comment", own)
