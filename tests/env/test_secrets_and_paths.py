"""Nothing private in a record: environment allow-list, secret names, hostname, paths, scrub."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from gpurepro.env import fingerprint as env
from gpurepro.env import privacy
from gpurepro.record.scrub import scrub_file

SECRETS = {"NVIDIA_API_KEY": "nvapi-" + "x" * 40, "CUDA_TOKEN": "abc", "NCCL_PASSWORD": "p",
           "cuda_secret": "s", "NVIDIA_AUTH": "a", "CUDA_COOKIE": "c", "GH_CREDENTIALS": "g"}


def test_environment_keeps_only_allowed_names():
    environ = {"CUDA_VISIBLE_DEVICES": "0,1", "CUDA_LAUNCH_BLOCKING": "1", "LD_PRELOAD": "/x/y.so",
               "NVIDIA_DRIVER_CAPABILITIES": "compute", "CUDA_SOMETHING_NEW": "1",
               "NVIDIA_REQUIRE_CUDA": "cuda>=13.0 brand=tesla", "HOME": "/home/alice",
               "PATH": "/usr/bin", "AWS_ACCESS_KEY_ID": "AKIA" + "A" * 16, **SECRETS}
    got = env.environment_variables(environ)
    assert got == {"CUDA_LAUNCH_BLOCKING": "1", "CUDA_VISIBLE_DEVICES": "0,1",
                   "LD_PRELOAD": "/x/y.so", "NVIDIA_DRIVER_CAPABILITIES": "compute"}


def test_allow_list_holds_no_secret_looking_name():
    assert not [n for n in env.ENV_ALLOWED if privacy.is_secret_name(n)]


@pytest.mark.parametrize("redact", [False, True])
def test_secret_names_are_never_recorded(monkeypatch, redact):
    for k, v in SECRETS.items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    fp = env.fingerprint(Path.cwd(), redact=redact, gpu_info={"available": False, "gpus": []})
    text = json.dumps(fp)
    assert fp["environment"]["CUDA_VISIBLE_DEVICES"] == "0"
    assert not [k for k in SECRETS if k in text]
    assert "nvapi-" not in text


@pytest.mark.parametrize("redact", [False, True])
def test_trial_env_drops_secret_names_and_masks_tokens(redact):
    record = {"env": {**SECRETS, "LD_PRELOAD": "/repo/build/a.so", "X": "ghp_" + "a" * 36}}
    got = privacy.portable_trial(record, root=Path("/repo"), redact=redact)["env"]
    assert got == {"LD_PRELOAD": "build/a.so", "X": privacy.SECRET_MASK}


def test_hostname_is_replaced_only_as_a_whole_token():
    text = "libnvvm.so vm.so vm-2 /opt/vm1 user@vm: ran on vm, /tmp/vm/x"
    assert privacy.redact_text(text, hostname="vm", home="/home/bob") == (
        "libnvvm.so vm.so vm-2 /opt/vm1 user@<host>: ran on <host>, /tmp/<host>/x")


def test_redact_text_default_hostname_keeps_longer_words(monkeypatch):
    monkeypatch.setattr(socket, "gethostname", lambda: "vm")
    assert privacy.redact_text("/usr/lib/libnvvm.so on vm") == "/usr/lib/libnvvm.so on <host>"


def test_home_directories_are_redacted():
    text = "/home/alice/x /Users/bob /root/.cache /rootfs/y https://github.com/root/z"
    assert privacy.redact_text(text, hostname="", home="/home/carol") == (
        "~/x ~ ~/.cache /rootfs/y https://github.com/root/z")


def test_portable_text():
    root = "/srv/ci/gpurepro"
    text = (f"{root}/build/a.so:{root}/cases/x --root={root} {root}line/x "
            "/home/u/.cache/y /home/u /home/uu")
    assert privacy.portable_text(text, root, home="/home/u") == (
        "build/a.so:cases/x --root=. /srv/ci/gpurepro" "line/x ~/.cache/y ~ /home/uu")


def test_portable_trial_record():
    rec = {"index": 0, "command": ["/repo/build/h", "--cubin", "/repo/build/k.cubin"],
           "env": {"LD_PRELOAD": "/repo/build/p.so", "NVIDIA_API_KEY": "nvapi-" + "k" * 30},
           "stderr_tail": "fault in /repo/build/h on gpu7 (" + "sk-" + "z" * 30 + ")",
           "exposure": 3}
    got = privacy.portable_trial(rec, Path("/repo"), redact=False)
    assert got["command"] == ["build/h", "--cubin", "build/k.cubin"]
    assert got["env"] == {"LD_PRELOAD": "build/p.so"}
    assert got["stderr_tail"] == f"fault in build/h on gpu7 ({privacy.SECRET_MASK})"
    assert got["exposure"] == 3 and rec["env"]["NVIDIA_API_KEY"]  # the input is left alone


def test_foreign_checkout_paths():
    text = ("/builds/ci/clone/build/tests/build/x.so:/a/b/cases/c/manifest.py "
            "https://github.com/o/r/blob/main/native/x.cc build/y /usr/lib/libc.so.6")
    assert privacy.foreign_checkout_text(text) == (
        "build/tests/build/x.so:cases/c/manifest.py "
        "https://github.com/o/r/blob/main/native/x.cc build/y /usr/lib/libc.so.6")


FOREIGN = "/mnt/alice-ci/gpurepro"


def _header():
    return {"kind": "gpurepro.journal", "case": "c", "started_at": "2026-01-01T00:00:00Z",
            "environment": {"host": {"hostname": "gpu-node-17", "os": "x"},
                            "environment": {"CUDA_VISIBLE_DEVICES": "0", "CUDA_TOKEN": "t",
                                            "CUDA_HOME": "/home/alice/cuda"},
                            "redacted": False},
            "options": {"extra_env": {"NVIDIA_API_KEY": "k"}}}


def _trial(i):
    return {"kind": "trial", "index": i, "arm": "a", "outcome": "crashed",
            "command": [f"{FOREIGN}/build/x/host", "--n", "3"],
            "env": {"LD_PRELOAD": f"{FOREIGN}/build/x/crash.so", "MY_SECRET": "s"},
            "stderr_tail": "SIGSEGV on gpu-node-17 in libnvvm.so at /usr/lib/libcuda.so.1"}


def test_scrub_journal(tmp_path):
    path = tmp_path / "r.journal.jsonl"
    lines = [json.dumps(o, sort_keys=True, separators=(",", ":")) for o in (_header(), _trial(0), _trial(1))]
    path.write_text("\n".join(lines) + "\n" + '{"kind":"trial","ind')  # a torn last line
    assert scrub_file(path, tmp_path, redact=True) is True
    out = path.read_text().split("\n")
    assert out[-1] == '{"kind":"trial","ind'
    header, t0, t1 = (json.loads(x) for x in out[:3])
    assert out[1] == json.dumps(t0, sort_keys=True, separators=(",", ":"))
    assert header["environment"]["host"]["hostname"] == "redacted"
    assert header["environment"]["redacted"] is True
    assert header["environment"]["environment"] == {"CUDA_HOME": "~/cuda", "CUDA_VISIBLE_DEVICES": "0"}
    assert header["options"]["extra_env"] == {}
    assert t0["command"] == ["build/x/host", "--n", "3"]
    assert t0["env"] == {"LD_PRELOAD": "build/x/crash.so"}
    assert t1["stderr_tail"] == "SIGSEGV on <host> in libnvvm.so at /usr/lib/libcuda.so.1"
    before = path.read_bytes()
    assert scrub_file(path, tmp_path, redact=True) is False  # idempotent
    assert path.read_bytes() == before


def test_scrub_journal_without_redaction_keeps_the_hostname(tmp_path):
    path = tmp_path / "r.journal.jsonl"
    path.write_text("\n".join(json.dumps(o, sort_keys=True, separators=(",", ":"))
                              for o in (_header(), _trial(0))) + "\n")
    assert scrub_file(path, tmp_path, redact=False) is True
    header, t0 = (json.loads(x) for x in path.read_text().splitlines())
    assert header["environment"]["host"]["hostname"] == "gpu-node-17"
    assert "CUDA_TOKEN" not in header["environment"]["environment"]
    assert t0["env"] == {"LD_PRELOAD": "build/x/crash.so"}
    assert "gpu-node-17" in t0["stderr_tail"]


def test_scrub_document(tmp_path):
    doc = {"schema": "gpurepro/result/1", "zeta": 1, "alpha": [1.5, None, True],
           "environment": _header()["environment"],
           "trials": [{k: v for k, v in _trial(i).items() if k != "kind"} for i in range(2)],
           "journal": "results/c/r.journal.jsonl", "case": {"report_url": "https://x.org/root/build/1"}}
    path = tmp_path / "r.json"
    path.write_text(json.dumps(doc, indent=1) + "\n")
    assert scrub_file(path, tmp_path, redact=True) is True
    text = path.read_text()
    got = json.loads(text)
    assert text == json.dumps(got, indent=1) + "\n"
    assert list(got) == list(doc)  # key order kept
    assert FOREIGN not in text and "gpu-node-17" not in text and "/home/alice" not in text
    assert "CUDA_TOKEN" not in text and "MY_SECRET" not in text
    assert got["trials"][1]["env"] == {"LD_PRELOAD": "build/x/crash.so"}
    assert {k: got[k] for k in ("zeta", "alpha", "journal", "case")} == {
        k: doc[k] for k in ("zeta", "alpha", "journal", "case")}
    before = path.read_bytes()
    assert scrub_file(path, tmp_path, redact=True) is False
    assert path.read_bytes() == before
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temp file left


def test_scrub_leaves_a_clean_document_byte_for_byte(tmp_path):
    path = tmp_path / "r.json"
    path.write_text('{"schema":  "gpurepro/result/1", "trials": []}\n')  # not the writer's layout
    before = path.read_bytes()
    assert scrub_file(path, tmp_path, redact=False) is False
    assert path.read_bytes() == before


def test_scrub_makes_paths_inside_the_given_root_relative(tmp_path):
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"x": f"{tmp_path}/schema/result.schema.json"}, indent=1) + "\n")
    assert scrub_file(path, tmp_path, redact=False) is True
    assert json.loads(path.read_text()) == {"x": "schema/result.schema.json"}


# ---------------------------------------------------------------- round two: values by pattern

# Secret values in variables that are allowed (their names look harmless): each is masked.
SECRET_VALUES = {
    "pypi": "pypi-AgEIcHlwaS5vcmcCJGZmYjQ5NTA0LTk2ZjAtNDM",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dBjftJeZ4CVPmB92K27uhbUJU1p1r",
    "url": "https://builder:hunter2-Pa55@artifacts.example.com/cuda",
    "google": "AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY",
    "npm": "npm_Xy9Tq3Lm8Kp2Wz7Rv4Bn6Jd1Hs5Gf0Ae3Cx8",
    "stripe": "sk_live_4eC39HqLyjWDarjtT1zdp7dc",
    "slack": "xoxb-1234567890-0987654321-AbCdEfGhIjKl",
    "github": "ghp_16C7e42F292c6912E7710c838347Ae178B4a",
    "github_pat": "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
    "entropy": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY",
    # the seven formats an outside review found passing through
    "base64url": "Zq3_Kx9-Vb2pLm7_Rt4wNc8-Yh1sJd6fQ0",
    "azure_sas": "https://acct.blob.core.windows.net/c/f?sv=2022-11-02&sig=Qk3%2Fz9Lm%2BtY7wR2pXc%3D",
    "scp": "deploy:Hunter2pass@git.example.com:org/repo.git",
    "google_oauth": "GOCSPX-1a2B3c4D5e6F7g8H9i0JkLmNoPq",
    "discord": "MTA4NzY1NDMyMTA5ODc2NTQz.GhT7xQ.Zk3pL9mQ2vR8sW4tY6uX1cB5nD0eF7gH3jK",
    "slack_app": "xapp-1-A012BCDEF3G-4567890123456-0a1b2c3d4e5f",
}
# What part of each value must not be in the masked text, where that is not the whole value.
SECRET_PART = {"url": "builder:hunter2-Pa55", "azure_sas": "Qk3%2Fz9Lm%2BtY7wR2pXc%3D",
               "scp": "deploy:Hunter2pass"}


@pytest.mark.parametrize("kind", sorted(SECRET_VALUES))
def test_a_secret_value_is_masked_whatever_its_variable(kind):
    value = SECRET_VALUES[kind]
    masked = privacy.clean_text(f"CUDA_HOME={value} and more")
    assert privacy.SECRET_MASK in masked and "and more" in masked
    assert SECRET_PART.get(kind, value) not in masked
    assert privacy.secret_values(value), kind
    if kind == "url":
        assert masked.endswith("<secret>@artifacts.example.com/cuda and more")
    if kind == "scp":
        assert masked == "CUDA_HOME=<secret>@git.example.com:org/repo.git and more"
    if kind == "azure_sas":
        assert "sv=2022-11-02&sig=<secret> and more" in masked


def test_a_40_digit_hex_value_of_an_environment_variable_is_masked():
    token = "4f3c2a1b0e9d8c7b6a5f4e3d2c1b0a9f8e7d6c5b"
    assert privacy.HEX40.search(token)
    trial = privacy.portable_trial({"env": {"CUDA_HOME": token}, "command": [f"x {token}"]}, "/x")
    assert trial["env"]["CUDA_HOME"] == privacy.SECRET_MASK
    assert trial["command"] == [f"x {token}"], "a hex string outside the environment is a hash"
    assert env.environment_variables({"CUDA_HOME": token}) == {"CUDA_HOME": privacy.SECRET_MASK}


def test_a_short_hostname_is_redacted_as_a_part_of_a_gpu_uuid(monkeypatch):
    monkeypatch.setattr(socket, "gethostname", lambda: "vm")
    gpu_info = {"available": True, "driver_version": "580.1",
                "gpus": [{"index": 0, "name": "NVIDIA H200", "uuid": "GPU-vm-0000",
                          "pci_bus_id": "00000000:00:06.0"}]}
    fp = env.fingerprint(Path.cwd(), redact=True, gpu_info=gpu_info)
    assert fp["gpu"]["gpus"][0]["uuid"] == "GPU-<host>-0000"
    assert privacy.redact_text("vm-2", hostname="vm") == "vm-2", "elsewhere, whole words only"


def test_hashes_uuids_and_names_are_not_taken_for_secrets():
    for harmless in ("3f9a" * 16, "GPU-57930161-e112-1265-6e1a-27640810674f", "a1b2c3d4" * 5,
                     "20261201T102114Z_NVIDIA-H200_redacted", "libcuda.so.1+0x31a708",
                     "cuda-python-lock-unload-launch", "_ZN4cuda3std6detail11__invoke_implE",
                     "20261202T063128Z-361562_NVIDIA-H200_redacted.forest_per_gpu",
                     "GPU-57930161-E112-1265-6E1A-27640810674F",
                     "GPU-46b0d2f7-9a3c-8e15-4f6d-b2c9a07e1d35",
                     "MIG-0b8f3a6c-1d2e-4f5a-9b7c-8d6e5f4a3b2c",
                     "nvidia_cuda_nvcc_cu12-12.5.40-py3-none-manylinux2014_x86_64.whl",
                     "test_the_rerun_block_reaches_the_no_driver_exit_with_the_documents_plan",
                     "https://pypi.org/simple/nvidia-cuda-nvcc/?format=json",
                     "git@github.com:NVIDIA/cuda-python.git"):
        assert privacy.secret_values(harmless) == [], harmless
        assert privacy.clean_text(harmless) == harmless


@pytest.mark.parametrize("redact", [False, True])
def test_secret_values_in_allowed_variables_never_reach_the_fingerprint(monkeypatch, redact):
    for i, value in enumerate(SECRET_VALUES.values()):
        monkeypatch.setenv(f"CUDA_HOME{i}" if i else "CUDA_HOME", value)
        monkeypatch.setenv(f"NVIDIA_TOOLKIT{i}", value)
    fp = env.fingerprint(Path.cwd(), redact=redact, gpu_info={"available": False, "gpus": []})
    text = json.dumps(fp)
    for kind, value in SECRET_VALUES.items():
        assert SECRET_PART.get(kind, value) not in text, kind


@pytest.mark.parametrize("spelling", ["//{home}/cfg", "{home}//cfg", "{home}/./x/../cfg",
                                      "{link}/cfg", "/{home}//.//cfg"])
def test_a_home_path_is_recognised_however_it_is_spelled(tmp_path, spelling):
    home = str(tmp_path / "home" / "alice")
    Path(home).mkdir(parents=True)
    link = tmp_path / "shortcut"
    link.symlink_to(home)
    text = "export X=" + spelling.format(home=home.lstrip("/") if spelling.startswith("/{") else home,
                                         link=link) + " done"
    assert privacy.portable_text(text, home=home) == "export X=~/cfg done"


def test_a_system_path_through_a_symlink_stays_as_written(tmp_path):
    target = tmp_path / "real"
    target.mkdir()
    (tmp_path / "alias").symlink_to(target)
    text = f"{tmp_path}/alias/lib64"
    assert privacy.portable_text(text, home="/home/nobody-here") == text


def test_redacted_homes_spelled_with_doubled_slashes():
    assert privacy.redact_text("//home/bob/x and /home//carol/y", hostname="h") == "~/x and ~/y"


def test_the_hostname_is_redacted_in_gpu_fields_too(monkeypatch):
    monkeypatch.setattr(socket, "gethostname", lambda: "gpunode17")
    gpu_info = {"available": True, "driver_version": "580.1 (gpunode17 build)",
                "gpus": [{"index": 0, "name": "NVIDIA H200 on gpunode17",
                          "uuid": "GPU-gpunode17-0000", "pci_bus_id": "00000000:00:06.0"}]}
    fp = env.fingerprint(Path.cwd(), redact=True, gpu_info=gpu_info)
    assert "gpunode17" not in json.dumps(fp)
    assert fp["gpu"]["gpus"][0]["name"] == "NVIDIA H200 on <host>"
    from gpurepro.run.execute import gate
    from gpurepro.run.session import gate_json

    class _Devices:
        requires_gpu = True
        targets = {"9.0": "sm_90"}
        why = None

        def target_for(self, cc):
            return "sm_90"

    class _Case:
        devices = _Devices()

    device = env.redact_value(gate_json(gate(_Case(), {**gpu_info, "gpus": [
        {**gpu_info["gpus"][0], "compute_capability": "9.0"}]}, None, ())), None)
    assert "gpunode17" not in json.dumps(device)
