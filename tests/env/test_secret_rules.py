"""Secrets are found by a maintained rule set (detect-secrets' regex plugins, exported into
env/secret_rules.json) and this project's own rules for what it does not cover, in environment
variables and in trial output alike; a masked value never fails validation; a short hostname
inside a GPU's name is redacted."""

from __future__ import annotations

import json
import random
import socket
import string
import time
from pathlib import Path

import pytest

from gpurepro.env import fingerprint as env
from gpurepro.env import privacy, secret_rules
from gpurepro.record.validation import meaning_errors, validation_errors
from tests.conftest import ROOT

# The values an outside review found reaching the journal, the document and the comment.
FOUND = {
    "openai_project": "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb7cDe0fGh3iJk",
    "sendgrid": "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",
    "slack_webhook": "https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
    "age": "AGE-SECRET-KEY-1QQPQZ8TG7ZPRDZ3JY0C6LS5LDJKXD59CTXE8PEYAM3GRQ2F6UJ8QDS5MXY",
    "password": "password=Tr0ub4dor&3",
    "openssh_body": "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW",
    "signed_url": "https://acct.blob.core.windows.net/c/f?sv=2022-11-02&se=2026&sig=Qk3Fz9LmtY7wR2pXc",
    "aws_secret": "aws_secret_access_key = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY'",
    "github": "ghp_16C7e42F292c6912E7710c838347Ae178B4a",
    "telegram": "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw0",
}
# The part of each that must be gone (the whole value where not named).
SECRET_PART = {"password": "Tr0ub4dor", "signed_url": "Qk3Fz9LmtY7wR2pXc",
               "aws_secret": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY",
               "slack_webhook": "XXXXXXXXXXXXXXXXXXXXXXXX"}


def test_the_committed_rules_are_the_pinned_detect_secrets_releases_own():
    """secret_rules.json is what `python -m gpurepro.env.secret_rules` exports from the release
    pyproject.toml's test extra pins: a release bump that changes its rules fails here until
    the file is exported again."""
    committed = json.loads(secret_rules.RULES_FILE.read_text())
    assert committed == json.loads(json.dumps(secret_rules.exported()))
    assert committed["source"].startswith("detect-secrets 1.5.0")
    plugins = {r.plugin for r in secret_rules.rules()}
    assert {"SendGridDetector", "SlackDetector", "AWSKeyDetector", "BasicAuthDetector",
            "JwtTokenDetector", "PrivateKeyDetector"} <= plugins
    assert not plugins & set(secret_rules.LEFT_OUT)


@pytest.mark.parametrize("kind", sorted(FOUND))
def test_each_found_secret_is_masked_in_a_variable_and_in_trial_output(kind):
    value = FOUND[kind]
    part = SECRET_PART.get(kind, value)
    assert privacy.secret_values(value), kind
    masked = privacy.mask_env_value(value)
    assert part not in masked and privacy.SECRET_MASK in masked
    trial = privacy.portable_trial({"stderr_tail": f"boom: {value}\n", "detail": value,
                                    "env": {"CUDA_HOME": value}, "command": ["drv", value]}, "/x")
    assert part not in json.dumps(trial), trial
    assert privacy.secret_values(json.dumps(trial)) == []


@pytest.mark.parametrize("redact", [False, True])
def test_found_secrets_in_allowed_variables_never_reach_the_fingerprint(monkeypatch, redact):
    for i, value in enumerate(FOUND.values()):
        monkeypatch.setenv(f"CUDA_HOME{i}", value)
    fp = env.fingerprint(Path.cwd(), redact=redact, gpu_info={"available": False, "gpus": []})
    text = json.dumps(fp)
    for kind, value in FOUND.items():
        assert SECRET_PART.get(kind, value) not in text, kind


def test_a_masked_value_never_fails_validation_and_masking_twice_changes_nothing():
    """Masking is idempotent over 3000 random strings built around every secret above and the
    characters of URLs and assignments: what it leaves, no rule finds again (a signed URL
    masked to sig=<secret> was refused by validate)."""
    rng = random.Random(46)
    pieces = [*FOUND.values(), "?sig=", "&token=", "://u:", "@host", "password: ", "=", "<", ">",
              "secret", "x" * 40, string.ascii_letters, "AKIA" + "A" * 16, " ", "\n", "/"]
    for _ in range(3000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randrange(1, 6)))
        once = privacy.mask_secrets(text)
        assert privacy.mask_secrets(once) == once, (text, once)
        assert privacy.secret_values(once) == [], (text, once)


def test_a_document_whose_variables_and_output_held_secrets_validates_once_masked(tmp_path):
    """A committed document with every found secret put in an allowed variable and a trial's
    output, masked as the run stage masks them: validate has nothing to say about secrets."""
    path = sorted((ROOT / "results" / "ptxas_abs_clamp").glob("*_redacted.json"))[-1]
    doc = json.loads(path.read_text())
    doc["environment"]["environment"] = {f"CUDA_X{i}": privacy.mask_env_value(v)
                                         for i, v in enumerate(FOUND.values())}
    doc["trials"][0]["stderr_tail"] = privacy.mask_secrets("\n".join(FOUND.values()))
    assert validation_errors(doc) == []
    assert not [e for e in meaning_errors(doc) if "secret" in e]
    doc["trials"][0]["stderr_tail"] = "\n".join(FOUND.values())  # unmasked: named
    assert [e for e in meaning_errors(doc) if "secret" in e]


def test_every_rule_takes_time_linear_in_a_long_line():
    """No rule backtracks over a whole 64 KiB line from every start (npm's, applied around its
    literal): the slowest input below is masked in well under its quadratic time."""
    for text in ("/" * 65536, "//a/:" * 13107, "://a:" * 13107, "password=" * 7281):
        started = time.process_time()
        privacy.mask_secrets(text)
        assert time.process_time() - started < 20, text[:10]


def test_a_short_hostname_inside_a_gpus_name_is_redacted(monkeypatch):
    monkeypatch.setattr(socket, "gethostname", lambda: "gn7")
    gpu_info = {"available": True, "driver_version": "580.1",
                "gpus": [{"index": 0, "name": "NVIDIA H200 gn7-node", "uuid": "GPU-gn7-0000",
                          "pci_bus_id": "00000000:00:06.0"}]}
    fp = env.fingerprint(Path.cwd(), redact=True, gpu_info=gpu_info)
    assert fp["gpu"]["gpus"][0]["name"] == "NVIDIA H200 <host>-node"
    assert "gn7" not in json.dumps(fp)
    assert env.redact_value({"name": "NVIDIA H200 gn7-node"}, None) == {
        "name": "NVIDIA H200 <host>-node"}
    assert privacy.redact_text("gn7-2", hostname="gn7") == "gn7-2", "elsewhere, whole words only"
