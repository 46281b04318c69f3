"""What a record may say about the machine it was made on: no secret, no private path.

A variable whose name looks secret (KEY, TOKEN, ...) is never recorded, and secret-looking
values are masked, with or without ``--redact``: known token prefixes, JWTs, the credentials of
a URL (``scheme://user:password@``) and long high-entropy strings; paths inside the checkout
are made relative to it and the home folder becomes ``~``, however the path is spelled (a
leading or doubled ``//``, ``..``, a symlink into it); ``--redact`` also replaces the hostname
(short, full and fully qualified) as a whole word, wherever it is (GPU fields included). ``portable_trial`` applies every rule to a trial record before it is journaled;
``portable_value`` to any JSON value (scrub, the matrix). Standard library only.
"""

from __future__ import annotations

import functools
import itertools
import math
import os
import re
import socket
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from . import secret_rules

# What other modules use; the rest is this module's own.
__all__ = [
    "CHECKOUT_PREFIX", "clean_text", "ENV_KEYS", "foreign_checkout_text", "HEX40", "HOME_PATH",
    "is_secret_name", "mask_env_value", "mask_secrets", "portable_text", "portable_trial",
    "portable_value", "redact_identifier", "redact_text", "SECRET_MASK", "secret_values"
]

# A name that looks like it holds a secret is never recorded, redacted or not, allowed or not.
SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH|COOKIE", re.IGNORECASE)
# Values that are secrets whatever their name. First a maintained rule set: detect-secrets'
# regex-based plugins (env/secret_rules.py, exported into secret_rules.json). Then this
# project's own rules, each for what that rule set does not find in a record's free text: its
# OpenAI rule knows only keys with the T3BlbkFJ marker (not sk-proj-…, sk-ant-…), its GitHub
# rule not fine-grained tokens (github_pat_), its PyPI rule only the macaroon's own prefix, its
# Stripe rule only 24-character live keys, and it has no rule for NVIDIA API keys, Hugging Face
# tokens, npm_ tokens, Google API keys and OAuth client secrets, age secret keys
# (AGE-SECRET-KEY-1…), Slack app-level tokens, a private key's body lines (only its BEGIN line),
# an scp-style remote's user:password, a URL query parameter that carries a signature or a key
# (an Azure SAS ``sig=``, S3/GCS presigned ``X-Amz-Signature=``, ``access_token=``), or an
# assignment to a secret-named key in plain text (``password=…``; its keyword plugin reads
# source code).
SECRET_VALUE = re.compile(
    r"(?<![\w-])(?:nvapi-[\w-]{16,}|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_\w{20,}"
    r"|(?:AKIA|ASIA)[0-9A-Z]{16}|x(?:ox[abposre]|app)-[\w-]{10,}|sk-[\w-]{20,}"
    r"|hf_[A-Za-z0-9]{20,}|glpat-[\w-]{20,}|pypi-[\w-]{16,}|npm_[A-Za-z0-9]{20,}"
    r"|AIza[\w-]{30,}|GOCSPX-[\w-]{20,}|[sr]k_(?:live|test)_[A-Za-z0-9]{16,}"
    r"|SG\.[\w-]{16,}\.[\w-]{16,}|AGE-SECRET-KEY-1[0-9A-Za-z]{20,}"
    r"|eyJ[\w-]{8,}\.eyJ[\w-]{8,}\.[\w-]{8,}"
    r"|[MNO][A-Za-z\d_-]{23,27}\.[\w-]{6}\.[\w-]{27,40})"
    # a Slack incoming webhook, whatever the shape of its path
    r"|https://hooks\.slack\.com/(?:services|workflows|triggers)/[\w/-]+"
    # a private key's body line: OpenSSH's (base64 of "openssh-key-v1"), and DER's (MII…)
    r"|(?<![A-Za-z0-9+/])(?:b3BlbnNzaC1rZXktdjE|MII[A-Za-z0-9+/]{20})[A-Za-z0-9+/]*={0,2}"
    # user:password in a URL (the scheme before it; the host after it stays)
    r"|(?<=://)[^/\s:@'\"<]+:[^/\s@'\"<]+(?=@)"
    # user:password of an scp-style remote, user:password@host:path (the host stays)
    r"|(?<![\w/:@.%-])[\w.-]+:[^\s/:@'\"<]+(?=@[\w.-]+:)"
)
# A signing or key query parameter (names as the services write them) and its value (group 2).
SIGNED_QUERY = re.compile(
    r"([?&](?:sig|Signature|signature|X-Amz-Signature|X-Goog-Signature|X-Amz-Credential"
    r"|X-Amz-Security-Token|access_token|api_key|apikey|token|key|password|secret)=)"
    r"([^&\s'\"#<]+)"
)
# A value given to a secret-named key in text: password=…, "api_key": "…", DB_PASSWORD: … (the
# value, group "value"; a name that only ends in such a word counts too).
ASSIGNED = re.compile(
    r"(?i)(?<![\w-])[\w.-]{0,40}?(?:password|passwd|passphrase|pwd|secret|api[_-]?key"
    r"|access[_-]?key|private[_-]?key|auth[_-]?token|access[_-]?token|client[_-]?secret)"
    r"[\"']?\s{0,3}[:=]{1,2}\s{0,3}[\"']?(?P<value>[^\s\"'&;,<>]{3,})"
)
SECRET_MASK = "<secret>"
# A long run of letters, digits and + / = with upper and lower case and digits in it, as random
# as a key is (bits per character by its own letter counts): an access key, a password, a
# base64 secret that no prefix names. Hex (hashes, UUIDs, commits) is lower case: never one.
HIGH_ENTROPY = re.compile(r"(?<![A-Za-z0-9+/_.-])[A-Za-z0-9+/]{32,}={0,2}(?![A-Za-z0-9+/=_-])")
HIGH_ENTROPY_BITS = 4.0
# The same in base64url, whose alphabet has - and _ where base64 has + and /. Names are spelled
# with those too (20261201T102114Z-361562_NVIDIA-H200_redacted, cuda-python-lock-unload-launch),
# so a token of this alphabet must also switch between upper case, lower case, digits and - _
# as often as random characters do: at about 0.65 of its neighbouring pairs for base64url, at
# 0.3 or less for names, timestamps and UUIDs (long runs of one kind).
HIGH_ENTROPY_URLSAFE = re.compile(r"(?<![A-Za-z0-9+/_.-])[A-Za-z0-9_-]{32,}(?![A-Za-z0-9+/=_-])")
URLSAFE_SWITCHES = 0.5
# A 40-digit hex string is a commit, a sha1 or a classic OAuth token, which no pattern tells
# apart: one in an environment variable's value is masked (the commits a record names come
# from git, not from the environment).
HEX40 = re.compile(r"(?<![0-9A-Fa-f])[0-9a-fA-F]{40}(?![0-9A-Fa-f])")
# A home directory: /home/<user>, /Users/<user>, /root (not inside a longer path or a URL).
HOME_PATH = re.compile(r"(?<![\w.~/-])(?:/home/[^/\s:'\",;=]+|/Users/[^/\s:'\",;=]+|/root)(?![\w.-])")
# An absolute path into some checkout of this repository: its prefix up to the first build/,
# cases/ or native/ component. The prefix is what a portable record drops.
CHECKOUT_PREFIX = re.compile(
    r"(?<![\w.~/-])(?:/[^/\s:'\",;=]+)+?/(?=(?:build|cases|native)/)"
)
# Keys under which a record holds environment variables (a trial's own env, the run's extra env);
# plus environment/environment in the fingerprint.
ENV_KEYS = ("env", "extra_env")


def is_secret_name(name: str) -> bool:
    """Whether an environment variable's name looks like it holds a secret (KEY, TOKEN, ...)."""
    return bool(SECRET_NAME.search(name))


def _random_looking(token: str) -> bool:
    if not (re.search(r"[A-Z]", token) and re.search(r"[a-z]", token) and re.search(r"[0-9]", token)):
        return False
    counts = Counter(token)
    bits = -sum(n / len(token) * math.log2(n / len(token)) for n in counts.values())
    return bits >= HIGH_ENTROPY_BITS


def _kind(c: str) -> int:
    return 0 if c.isupper() else 1 if c.islower() else 2 if c.isdigit() else 3


# Hex with dashes after a short word (GPU-<uuid>, MIG-<uuid>): a device's name, never a secret.
_PREFIXED_HEX = re.compile(r"(?:[A-Za-z]{1,8}[-_])?[0-9a-fA-F_-]+")


def _random_looking_urlsafe(token: str) -> bool:
    if not ("-" in token or "_" in token) or _PREFIXED_HEX.fullmatch(token):
        return False
    if not _random_looking(token):
        return False
    switches = sum(_kind(a) != _kind(b) for a, b in itertools.pairwise(token))
    return switches / (len(token) - 1) >= URLSAFE_SWITCHES


def secret_spans(text: str) -> list[tuple[int, int]]:
    """Where the secrets in ``text`` are, as (start, end), in order and not overlapping: every
    rule's finds (the maintained rule set's, then this module's, then the high-entropy strings),
    overlapping ones joined. A find that is the mask itself is none: masked text has no secret
    left to find (``mask_secrets`` is idempotent, so a masked value never fails validation)."""
    return list(_spans(text))


# A document repeats its strings (each trial's command, arm and outcome words: 785 distinct of
# 8,615 in the largest committed one), and every rule is a pure function of the text.
@functools.lru_cache(maxsize=8192)
def _spans(text: str) -> tuple[tuple[int, int], ...]:
    found = [span for rule in secret_rules.rules() for span in rule.spans(text)]
    found += [m.span() for m in SECRET_VALUE.finditer(text)]
    found += [m.span(2) for m in SIGNED_QUERY.finditer(text)]
    found += [m.span("value") for m in ASSIGNED.finditer(text)]
    found += [m.span() for m in HIGH_ENTROPY.finditer(text) if _random_looking(m.group(0))]
    found += [m.span() for m in HIGH_ENTROPY_URLSAFE.finditer(text)
              if _random_looking_urlsafe(m.group(0))]
    merged: list[tuple[int, int]] = []
    for start, end in sorted(span for span in found if text[span[0]:span[1]] != SECRET_MASK):
        if merged and start < merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return tuple(merged)


def secret_values(text: str) -> list[str]:
    """The secret-looking values in ``text`` (``secret_spans``)."""
    return [text[start:end] for start, end in secret_spans(text)]


def mask_secrets(text: str) -> str:
    """``text`` with every secret (``secret_spans``) replaced by SECRET_MASK, again until none
    is left: a mask can end a word that hid an assignment after it (``…<secret>password=…``)."""
    for _ in range(_MASK_PASSES):
        spans = secret_spans(text)
        if not spans:
            break
        out, at = [], 0
        for start, end in spans:
            out += [text[at:start], SECRET_MASK]
            at = end
        text = "".join(out) + text[at:]
    return text


_MASK_PASSES = 8


def mask_env_value(text: str) -> str:
    """An environment variable's value as a record keeps it: secrets masked, and a 40-digit hex
    string too (HEX40)."""
    return HEX40.sub(SECRET_MASK, mask_secrets(text))


# Not preceded by what would make the match the inside of a longer path, word or URL.
_NOT_INSIDE = r"(?<![\w.~/-])"


def _path_re(path: str) -> re.Pattern[str]:
    """``path`` as a whole path: not inside a longer one, not followed by more of its name."""
    return re.compile(_NOT_INSIDE + re.escape(path.rstrip("/")) + r"(?=/|[^\w.-]|$)")


# An absolute path as text holds one: not inside a word, a URL (``://``) or a longer path.
_ABSOLUTE = re.compile(r"(?<![\w.~:/-])/+[^\s:'\",;=()<>|]*")


def _lands_in(path: str, folder: str) -> bool:
    return bool(folder) and folder != "/" and (path == folder or path.startswith(folder + "/"))


def resolved_paths(text: str, folders: list[str]) -> str:
    """Each absolute path in ``text`` that leads into one of ``folders`` spelled otherwise (a
    leading or doubled ``//``, ``.`` or ``..``, a symlink on the way) in the spelling the folder
    has, so the rules that replace the folder find it; any other path is left as written (a
    symlinked system folder stays as the record's reader knows it)."""
    folders = [f.rstrip("/") for f in folders if f and f.rstrip("/")]
    if not folders:
        return text

    def fix(m: re.Match[str]) -> str:
        path = m.group(0)
        plain = os.path.normpath("/" + path.lstrip("/")) + ("/" if path.endswith("/") and len(path) > 1 else "")
        for candidate in (plain, _real(plain)):
            if candidate and any(_lands_in(candidate.rstrip("/") or "/", f) for f in folders):
                return candidate
        return path

    return _ABSOLUTE.sub(fix, text)


def _real(path: str) -> str | None:
    """The path with every symlink on it resolved (as far as it exists)."""
    try:
        return os.path.realpath(path)
    except (OSError, ValueError):
        return None


def portable_text(text: str, root: Path | str | None = None, home: str | None = None) -> str:
    """Paths made portable: inside the checkout ``root`` relative to it (``root`` itself is
    "."), the home directory (default: this user's) as ``~``; however either is spelled
    (``resolved_paths``)."""
    home = os.path.expanduser("~") if home is None else home
    folders = [home] if home and home != "/" else []
    if root is not None:
        folders += [str(root), os.path.realpath(root)]
    if "/" in text:
        text = resolved_paths(text, folders)
    if root is not None:
        for r in dict.fromkeys((str(root).rstrip("/"), os.path.realpath(root))):
            if r and r != "/":
                text = re.sub(_NOT_INSIDE + re.escape(r) + "/", "", text)
                text = _path_re(r).sub(".", text)
    if home and home != "/":
        text = _path_re(home).sub("~", text)
    return text


def foreign_checkout_text(text: str) -> str:
    """Absolute paths into any checkout (``/x/y/build/...``, ``cases/``, ``native/``) made
    relative to it: a record made in another clone carries that clone's location otherwise."""
    return CHECKOUT_PREFIX.sub("", text)


# A hostname this long is replaced wherever it appears, inside a GPU's UUID or a longer word
# too; a shorter one only as a whole token.
HOST_ANYWHERE = 6


def _host_re(host: str) -> re.Pattern[str]:
    # The hostname as a whole token: not part of a longer word, file name or path component
    # (hostname "vm" must leave libnvvm.so and vm.so alone; "user@vm:" and "/tmp/vm/" change);
    # a long one anywhere ("GPU-gpunode17-0000").
    if len(host) >= HOST_ANYWHERE:
        return re.compile(re.escape(host))
    return re.compile(r"(?<![\w-])(?<!\w\.)" + re.escape(host) + r"(?![\w-])(?!\.\w)")


def redact_text(text: str, hostname: str | None = None, home: str | None = None) -> str:
    """The hostname (default: this machine's) as ``<host>``, whole tokens only; the home
    directory (default: this user's) and any /home/<user>, /Users/<user>, /root as ``~``."""
    for name in host_names(hostname):
        text = _host_re(name).sub("<host>", text)
    home = os.path.expanduser("~") if home is None else home
    if home and home != "/":
        if "/" in text:
            text = resolved_paths(text, [home])
        text = _path_re(home).sub("~", text)
    return HOME_PATH.sub("~", _ABSOLUTE.sub(_plain_if_a_home, text))


def redact_identifier(text: str, hostname: str | None = None) -> str:
    """The hostname (default: this machine's), in any of its spellings, as ``<host>`` where it
    is one whole part of ``text`` between spaces and dashes (a device UUID or name a virtual
    machine's host built: ``GPU-vm-0000``, ``NVIDIA H200 vm-node``)."""
    names = set(host_names(hostname))
    return re.sub(r"[^\s-]+", lambda m: "<host>" if m.group(0) in names else m.group(0), text)


def _plain_if_a_home(m: re.Match[str]) -> str:
    """A path into any home folder in its plain spelling (no ``//``, ``.`` or ``..``), so
    HOME_PATH finds it; other paths as written."""
    path = m.group(0)
    plain = os.path.normpath("/" + path.lstrip("/"))
    return plain if HOME_PATH.match(plain) else path


def host_names(hostname: str | None = None) -> list[str]:
    """The spellings of a host's name to redact, longest first: as given (default: this
    machine's), its fully qualified name (this machine's only), its short name."""
    host = socket.gethostname() if hostname is None else hostname
    if not host or host in ("localhost", "redacted"):
        return []
    names = {host, host.split(".")[0]}
    if hostname is None or hostname == socket.gethostname():
        try:
            fqdn = socket.getfqdn()
        except OSError:
            fqdn = ""
        if fqdn and fqdn not in ("localhost", "localhost.localdomain") and fqdn.split(".")[0] == host.split(".")[0]:
            names.add(fqdn)
    return sorted((n for n in names if n and n not in ("localhost", "redacted")), key=len, reverse=True)


def clean_text(text: str, root: Path | str | None = None, redact: bool = False,
               hostname: str | None = None, foreign: bool = False) -> str:
    """Every rule for text a record keeps: portable paths (and, with ``foreign``, paths into
    other checkouts), secret-looking tokens masked, and with ``redact`` the hostname and homes."""
    if foreign:
        text = foreign_checkout_text(text)
    text = mask_secrets(portable_text(text, root))
    return redact_text(text, hostname) if redact else text


def portable_value(value: Any, root: Path | str | None = None, redact: bool = False,
                   hostname: str | None = None, foreign: bool = False,
                   _key: str | None = None, _parent: str | None = None) -> Any:
    """``clean_text`` over every string of a JSON value (keys are left alone), and every
    environment dict in it (under "env", "extra_env", or environment/environment) without its
    secret-named variables."""
    if isinstance(value, str):
        return clean_text(value, root, redact, hostname, foreign)
    if isinstance(value, Mapping):
        is_env = _key in ENV_KEYS or (_key == "environment" and _parent == "environment")
        kept = {k: portable_value(v, root, redact, hostname, foreign, str(k), _key)
                for k, v in value.items() if not (is_env and is_secret_name(str(k)))}
        if is_env:  # a variable's value: a 40-digit hex string masked too (HEX40)
            return {k: HEX40.sub(SECRET_MASK, v) if isinstance(v, str) else v for k, v in kept.items()}
        return kept
    if isinstance(value, list | tuple):
        return [portable_value(v, root, redact, hostname, foreign, None, _key) for v in value]
    return value


def portable_trial(record: Mapping[str, Any], root: Path | str, redact: bool = False) -> dict[str, Any]:
    """A trial record as it may be journaled: its ``env`` without secret-named variables, and in
    every string (``command``, ``env`` values, ``stderr_tail``, ``detail``) paths inside ``root``
    relative, the home directory as ``~``, secret-looking tokens masked; with ``redact`` also
    the hostname and any home directory."""
    out: dict[str, Any] = portable_value(dict(record), root, redact)
    return out
