"""write_bundle / load_bundle: file names, modes, atomic replacement, and what is refused."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from kustodian.certs.errors import InvalidBundle
from kustodian.certs.issue import KeyPair, issue_ca, issue_serving, load_bundle, write_bundle

FILES = {"ca.crt", "tls.crt", "tls.key"}
NOW = datetime.fromisoformat("2025-06-01T12:00:00+00:00")


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def umask(request: pytest.FixtureRequest) -> Iterator[int]:
    """Run the test under the umask given by indirect parametrisation, then restore it."""
    wanted: int = request.param
    previous = os.umask(wanted)
    try:
        yield wanted
    finally:
        os.umask(previous)


def test_writes_the_three_files_and_reads_them_back(bundle_dir: Path, ca: KeyPair, serving: KeyPair) -> None:
    assert {p.name for p in bundle_dir.iterdir()} == FILES
    assert (bundle_dir / "ca.crt").read_bytes() == ca.cert_pem
    assert (bundle_dir / "tls.crt").read_bytes() == serving.cert_pem
    assert (bundle_dir / "tls.key").read_bytes() == serving.key_pem
    assert load_bundle(bundle_dir) == (ca.cert_pem, serving)


@pytest.mark.parametrize(
    "umask", [0o000, 0o022, 0o077], ids=["umask 000", "umask 022", "umask 077"], indirect=True
)
def test_key_is_0600_and_certificates_are_readable(
    tmp_path: Path, ca: KeyPair, serving: KeyPair, umask: int
) -> None:
    write_bundle(tmp_path, ca, serving)
    assert mode(tmp_path / "tls.key") == 0o600
    assert mode(tmp_path / "tls.crt") == 0o644 & ~umask
    assert mode(tmp_path / "ca.crt") == 0o644 & ~umask


def test_creates_missing_directories(tmp_path: Path, ca: KeyPair, serving: KeyPair) -> None:
    out = tmp_path / "a" / "b" / "certs"
    write_bundle(out, ca, serving)
    assert {p.name for p in out.iterdir()} == FILES


def test_replaces_an_existing_bundle_and_tightens_a_loose_key(
    tmp_path: Path, ca: KeyPair, serving: KeyPair, now: datetime
) -> None:
    for name in FILES:
        (tmp_path / name).write_bytes(b"old")
    (tmp_path / "tls.key").chmod(0o644)
    new_ca = issue_ca(now=now)
    new_serving = issue_serving(new_ca, service="webhook", namespace="kustodian", now=now)

    write_bundle(tmp_path, new_ca, new_serving)

    assert load_bundle(tmp_path) == (new_ca.cert_pem, new_serving)
    assert mode(tmp_path / "tls.key") == 0o600
    assert {p.name for p in tmp_path.iterdir()} == FILES


def test_each_file_appears_whole_and_with_its_final_mode(
    tmp_path: Path, ca: KeyPair, serving: KeyPair, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Look at every temporary file at the instant it is renamed into place."""
    seen: list[tuple[str, str, int, bytes]] = []
    real_replace = os.replace

    def spying_replace(src: Any, dst: Any) -> None:
        src_path, dst_path = Path(src), Path(dst)
        seen.append((src_path.name, dst_path.name, mode(src_path), src_path.read_bytes()))
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", spying_replace)
    write_bundle(tmp_path, ca, serving)

    assert [dst for _, dst, _, _ in seen] == ["ca.crt", "tls.key", "tls.crt"]
    for src, dst, file_mode, content in seen:
        assert src.startswith(f".{dst}.") and src.endswith(".tmp")
        assert content == (tmp_path / dst).read_bytes()
        if dst == "tls.key":
            assert file_mode == 0o600
    assert {p.name for p in tmp_path.iterdir()} == FILES


def test_the_key_is_never_chmodded(
    tmp_path: Path, ca: KeyPair, serving: KeyPair, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("permissions must be set when the file is created")

    for name in ("chmod", "fchmod", "lchmod"):
        if hasattr(os, name):
            monkeypatch.setattr(os, name, refuse)
    monkeypatch.setattr(Path, "chmod", refuse)
    write_bundle(tmp_path, ca, serving)
    assert mode(tmp_path / "tls.key") == 0o600


def _fail(*args: object, **kwargs: object) -> Any:
    raise OSError(28, "No space left on device")


@pytest.mark.parametrize("failing", ["fsync", "replace"], ids=["disk full while syncing", "rename fails"])
def test_a_failed_write_leaves_the_old_file_and_no_temporary(
    tmp_path: Path,
    ca: KeyPair,
    serving: KeyPair,
    now: datetime,
    monkeypatch: pytest.MonkeyPatch,
    failing: str,
) -> None:
    write_bundle(tmp_path, ca, serving)
    before = {name: (tmp_path / name).read_bytes() for name in FILES}
    new_ca = issue_ca(now=now)
    new_serving = issue_serving(new_ca, service="webhook", namespace="kustodian", now=now)

    monkeypatch.setattr(os, failing, _fail)
    with pytest.raises(OSError, match="No space left"):
        write_bundle(tmp_path, new_ca, new_serving)
    monkeypatch.undo()

    assert {p.name for p in tmp_path.iterdir()} == FILES
    assert {name: (tmp_path / name).read_bytes() for name in FILES} == before


# -- refusals ---------------------------------------------------------------------------------


def test_refuses_to_write_a_key_that_does_not_match(tmp_path: Path, ca: KeyPair, serving: KeyPair) -> None:
    stranger = issue_ca(now=NOW)
    with pytest.raises(InvalidBundle, match="private key does not match certificate") as caught:
        write_bundle(tmp_path / "out", ca, KeyPair(serving.cert_pem, stranger.key_pem))
    assert tuple(map(str, caught.value.problems)) == ("serving: private key does not match certificate",)
    assert not (tmp_path / "out").exists()


def test_refuses_to_write_a_leaf_from_another_ca(tmp_path: Path, serving: KeyPair, now: datetime) -> None:
    with pytest.raises(InvalidBundle) as caught:
        write_bundle(tmp_path, issue_ca(now=now), serving)
    assert tuple(map(str, caught.value.problems)) == ("serving: certificate is not signed by ca",)


def _other_key(_: Path) -> bytes:
    return issue_ca(now=NOW).key_pem


def _other_ca(_: Path) -> bytes:
    return issue_ca(now=NOW).cert_pem


BROKEN = {
    "every file missing": (
        {"ca.crt": None, "tls.crt": None, "tls.key": None},
        ["ca.crt: missing", "tls.crt: missing", "tls.key: missing"],
    ),
    "garbage certificate and key": (
        {"tls.crt": lambda _: b"nope", "tls.key": lambda _: b"nope"},
        ["tls.crt: not PEM-encoded X.509 certificate(s)", "tls.key: not an unencrypted PEM private key"],
    ),
    "key from another pair": (
        {"tls.key": _other_key},
        ["tls.key: does not match the certificate in tls.crt"],
    ),
    "certificate from another ca": (
        {"ca.crt": _other_ca},
        ["tls.crt: not signed by any certificate in ca.crt"],
    ),
    "a directory where a file should be": ({"tls.key": "dir"}, ["tls.key: cannot read (Is a directory)"]),
}


@pytest.mark.parametrize(("damage", "expected"), BROKEN.values(), ids=BROKEN.keys())
def test_load_reports_every_problem(bundle_dir: Path, damage: dict[str, Any], expected: list[str]) -> None:
    for name, how in damage.items():
        path = bundle_dir / name
        path.unlink()
        if how == "dir":
            path.mkdir()
        elif how is not None:
            path.write_bytes(how(path))
    with pytest.raises(InvalidBundle) as caught:
        load_bundle(bundle_dir)
    assert str(caught.value).startswith(f"cannot load certificate bundle from {bundle_dir}: ")
    assert list(map(str, caught.value.problems)) == expected


def test_load_accepts_a_ca_file_holding_several_cas(bundle_dir: Path, ca: KeyPair, now: datetime) -> None:
    """During CA rotation ca.crt may carry the new and the old CA."""
    several = issue_ca(now=now).cert_pem + ca.cert_pem
    (bundle_dir / "ca.crt").write_bytes(several)
    ca_pem, _ = load_bundle(bundle_dir)
    assert ca_pem == several
