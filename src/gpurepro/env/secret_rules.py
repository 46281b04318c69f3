"""The secret rules every recorded string is masked by: a maintained rule set, not a hand list.

The rules are detect-secrets' (Yelp's secret scanner, Apache License 2.0): the regular
expressions of its regex-based plugins (AWS, Azure storage, basic auth in URLs, Cloudant,
Discord, GitHub, GitLab, IBM Cloud, JWTs, Mailchimp, npm, OpenAI, private-key headers, PyPI,
SendGrid, Slack tokens and webhooks, SoftLayer, Square, Stripe, Telegram, Twilio), exported
from the release the test environment pins into ``secret_rules.json`` beside this file. The run
stage masks records on GPU nodes with the standard library alone, and detect-secrets is not
that (it imports requests and PyYAML), so the rules travel as data and are compiled here with
``re``; ``tests/env/test_secret_rules.py`` exports them again from the pinned release and fails
when the committed file differs, so a release bump brings its new rules with it.

    python -m gpurepro.env.secret_rules    # write secret_rules.json from the installed release

Left out, and why (``LEFT_OUT``): the public IPv4 detector (an address is no credential and
documents hold none), Artifactory's ``AP…`` pattern (it matches words such as a driver's or a
kernel's name in prose). Its entropy plugins read quoted strings in source files, and its
keyword plugin assignments in source code; what records need of both is in
``env/privacy.py``'s own rules, each named there for what detect-secrets does not cover.

Standard library only.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

# What other modules use; the rest is this module's own.
__all__ = ["exported", "json", "LEFT_OUT", "main", "rules", "RULES_FILE"]

RULES_FILE = Path(__file__).with_name("secret_rules.json")
SOURCE = "detect-secrets"
LEFT_OUT = {
    "IPPublicDetector": "an IPv4 address is no credential; records hold none",
    "ArtifactoryDetector": "its AP… pattern matches ordinary words in prose",
}
# Rules whose expression backtracks over a whole line from every start (npm's ``//.+/:_authToken``
# takes minutes on a 64 KiB line of slashes) are applied only around the literal every match
# holds: from ``before`` characters ahead of it to ``after`` characters past it, on its line.
_AROUND = {"NpmDetector": ("_authToken", 256, 512)}
_FLAGS = {"IGNORECASE": re.IGNORECASE, "VERBOSE": re.VERBOSE, "MULTILINE": re.MULTILINE,
          "DOTALL": re.DOTALL}


@dataclass(frozen=True)
class Rule:
    """One expression of a maintained rule set: what it finds, and which part is the secret."""

    plugin: str  # the detector it comes from (detect-secrets' class name)
    kind: str  # what it finds, in the detector's words
    pattern: re.Pattern[str]

    def spans(self, text: str) -> list[tuple[int, int]]:
        """The secret's (start, end) in each match: the match's first group where that group
        ends the match (a closing quote or ``@`` after it at most: an assignment's or a URL's
        value), else the whole match (a token whose group is only its prefix)."""
        around = _AROUND.get(self.plugin)
        if around is None:
            return self._spans(text, 0, len(text))
        literal, before, after = around
        out: list[tuple[int, int]] = []
        at = text.find(literal)
        while at >= 0:
            start = max(text.rfind("\n", 0, at) + 1, at - before)
            # the window's end: its line's end, or ``after`` characters past the literal
            newline = text.find("\n", at)
            end = min(len(text) if newline < 0 else newline, at + len(literal) + after)
            out += self._spans(text, start, end)
            at = text.find(literal, end)
        return out

    def _spans(self, text: str, pos: int, endpos: int) -> list[tuple[int, int]]:
        out = []
        for m in self.pattern.finditer(text, pos, endpos):
            start, end = m.span()
            if m.lastindex:
                group = next((g for g in range(1, m.lastindex + 1) if m.group(g)), None)
                if group is not None and m.end() - m.end(group) <= 1:
                    start, end = m.span(group)
            if end > start:
                out.append((start, end))
        return out


@cache
def rules() -> tuple[Rule, ...]:
    """The committed rule set, compiled."""
    data = json.loads(RULES_FILE.read_text())
    compiled = []
    for r in data["rules"]:
        flags = 0
        for name in r["flags"]:
            flags |= _FLAGS[name]
        compiled.append(Rule(r["plugin"], r["kind"], re.compile(r["pattern"], flags)))
    return tuple(compiled)


def exported() -> dict[str, object]:
    """The rule set of the installed detect-secrets release, as ``secret_rules.json`` holds it."""
    from importlib.metadata import version

    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    from detect_secrets.plugins.base import RegexBasedDetector

    out = []
    for kind, plugin in sorted(get_mapping_from_secret_type_to_class().items(),
                               key=lambda item: item[1].__name__):
        if not issubclass(plugin, RegexBasedDetector) or plugin.__name__ in LEFT_OUT:
            continue
        for pattern in plugin.denylist:
            flags = [name for name, flag in _FLAGS.items() if pattern.flags & flag]
            out.append({"plugin": plugin.__name__, "kind": kind, "pattern": pattern.pattern,
                        "flags": flags})
    return {"source": f"{SOURCE} {version(SOURCE)} (Apache License 2.0): the regular "
                      f"expressions of its regex-based plugins (gpurepro/env/secret_rules.py)",
            "left_out": LEFT_OUT, "rules": out}


def main() -> None:
    RULES_FILE.write_text(json.dumps(exported(), indent=1) + "\n")
    print(f"wrote {RULES_FILE}")


if __name__ == "__main__":
    main()
