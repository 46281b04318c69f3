"""What a record may say about the machine it was made on: no secret, no private path.

A variable whose name looks secret (KEY, TOKEN, ...) is never recorded, and secret-looking
values are masked, with or without ``--redact``; paths inside the checkout are made relative to
it and the home folder becomes ``~``; ``--redact`` also replaces the hostname, as a whole word
only. ``portable_trial`` applies every rule to a trial record before it is journaled;
``portable_value`` to any JSON value (scrub, the matrix). Standard library only.
"""

from __future__ import annotations

import os
import re
import socket
from collections.abc import Mapping
from pathlib import Path
from typing import Any

# A name that looks like it holds a secret is never recorded, redacted or not, allowed or not.
SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH|COOKIE", re.IGNORECASE)
# Values that are secrets whatever their name: NVIDIA API keys, GitHub tokens, AWS access key
# ids, Slack tokens, OpenAI/Anthropic-style keys, Hugging Face and GitLab tokens.
SECRET_VALUE = re.compile(
    r"(?<![\w-])(?:nvapi-[\w-]{16,}|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_\w{20,}"
    r"|(?:AKIA|ASIA)[0-9A-Z]{16}|xox[abposr]-[\w-]{10,}|sk-[\w-]{20,}|hf_[A-Za-z0-9]{20,}"
    r"|glpat-[\w-]{20,})"
)
SECRET_MASK = "<secret>"
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


def secret_values(text: str) -> list[str]:
    """The secret-looking tokens in ``text`` (nvapi-..., ghp_..., AKIA..., sk-..., ...)."""
    return SECRET_VALUE.findall(text)


def mask_secrets(text: str) -> str:
    return SECRET_VALUE.sub(SECRET_MASK, text)


# Not preceded by what would make the match the inside of a longer path, word or URL.
_NOT_INSIDE = r"(?<![\w.~/-])"


def _path_re(path: str) -> re.Pattern[str]:
    """``path`` as a whole path: not inside a longer one, not followed by more of its name."""
    return re.compile(_NOT_INSIDE + re.escape(path.rstrip("/")) + r"(?=/|[^\w.-]|$)")


def portable_text(text: str, root: Path | str | None = None, home: str | None = None) -> str:
    """Paths made portable: inside the checkout ``root`` relative to it (``root`` itself is
    "."), the home directory (default: this user's) as ``~``."""
    if root is not None:
        for r in dict.fromkeys((str(root).rstrip("/"), os.path.realpath(root))):
            if r and r != "/":
                text = re.sub(_NOT_INSIDE + re.escape(r) + "/", "", text)
                text = _path_re(r).sub(".", text)
    home = os.path.expanduser("~") if home is None else home
    if home and home != "/":
        text = _path_re(home).sub("~", text)
    return text


def foreign_checkout_text(text: str) -> str:
    """Absolute paths into any checkout (``/x/y/build/...``, ``cases/``, ``native/``) made
    relative to it: a record made in another clone carries that clone's location otherwise."""
    return CHECKOUT_PREFIX.sub("", text)


def _host_re(host: str) -> re.Pattern[str]:
    # The hostname as a whole token: not part of a longer word, file name or path component
    # (hostname "vm" must leave libnvvm.so and vm.so alone; "user@vm:" and "/tmp/vm/" change).
    return re.compile(r"(?<![\w-])(?<!\w\.)" + re.escape(host) + r"(?![\w-])(?!\.\w)")


def redact_text(text: str, hostname: str | None = None, home: str | None = None) -> str:
    """The hostname (default: this machine's) as ``<host>``, whole tokens only; the home
    directory (default: this user's) and any /home/<user>, /Users/<user>, /root as ``~``."""
    host = socket.gethostname() if hostname is None else hostname
    if host and host not in ("localhost", "redacted"):
        names = [host] + ([host.split(".")[0]] if "." in host else [])
        for name in names:
            if name:
                text = _host_re(name).sub("<host>", text)
    home = os.path.expanduser("~") if home is None else home
    if home and home != "/":
        text = _path_re(home).sub("~", text)
    return HOME_PATH.sub("~", text)


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
        return {k: portable_value(v, root, redact, hostname, foreign, str(k), _key)
                for k, v in value.items() if not (is_env and is_secret_name(str(k)))}
    if isinstance(value, list | tuple):
        return [portable_value(v, root, redact, hostname, foreign, None, _key) for v in value]
    return value


def portable_trial(record: Mapping[str, Any], root: Path | str, redact: bool = False) -> dict[str, Any]:
    """A trial record as it may be journaled: its ``env`` without secret-named variables, and in
    every string (``command``, ``env`` values, ``stderr_tail``, ``detail``) paths inside ``root``
    relative, the home directory as ``~``, secret-looking tokens masked; with ``redact`` also
    the hostname and any home directory."""
    return portable_value(dict(record), root, redact)
