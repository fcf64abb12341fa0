"""Collect the runtime root filesystem of the Kustodian image into /rootfs (run in the builder).

The final stage is ``FROM scratch`` plus this tree: the Python interpreter and its standard
library, every shared library that the interpreter, the standard library's extension modules
and the virtualenv's extension modules load (found with ``ldd``), the dynamic loader and its
cache, the CA bundle, ``sleep`` (the chart's preStop hook), ``/etc/passwd`` naming the
non-root user, ``/tmp``, and the virtualenv at /opt/kustodian. No shell, no package manager,
no compiler: what an attacker with code execution would use is not there, and the image is
about half the size of the base it was built on. Works on any Debian-like base with python3
(Debian's python3 under /usr, or the python:3.11-slim layout under /usr/local).

Standard library only: it runs before anything is installed.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

OUT = Path("/rootfs")
VENV = Path("/opt/kustodian")
# never imported by a server process; large
STDLIB_SKIP = {"test", "idlelib", "tkinter", "turtledemo", "ensurepip", "lib2to3", "pydoc_data",
               "turtle.py", "config-3.11-x86_64-linux-gnu"}
EXTRA_BINARIES = ["sleep"]
# loaded with dlopen, so ldd cannot see them: glibc needs libgcc_s to unwind threads on exit
DLOPENED = ["libgcc_s.so.1"]


def place(path: Path) -> None:
    """Copy ``path`` to the same place under OUT, following and recreating its symlinks."""
    dest = OUT / path.relative_to("/")
    if dest.exists() or dest.is_symlink():
        return
    dest.parent.mkdir(parents=True, exist_ok=True)
    if path.is_symlink():
        target = os.readlink(path)
        dest.symlink_to(target)
        place((path.parent / target) if not os.path.isabs(target) else Path(target))
    elif path.is_dir():
        shutil.copytree(path, dest, symlinks=True)
    else:
        shutil.copy2(path, dest)


def libraries(binary: Path) -> set[Path]:
    out = subprocess.run(["ldd", str(binary)], capture_output=True, text=True, check=False).stdout
    found = set()
    for line in out.splitlines():
        match = re.search(r"(/\S+) \(0x", line)
        if match:
            found.add(Path(match.group(1)))
    return found


def elf_files(root: Path) -> list[Path]:
    return [p for p in root.rglob("*.so*") if p.is_file() and not p.is_symlink()]


def main() -> int:
    # a merged /usr (Debian since bookworm): /lib, /bin ... are symlinks into /usr, kept as such
    OUT.mkdir(exist_ok=True)
    for top in ("bin", "sbin", "lib", "lib64", "lib32", "libx32"):
        if Path("/", top).is_symlink():
            target = os.readlink(Path("/", top))
            (OUT / top).symlink_to(target)
            (OUT / target.lstrip("/")).mkdir(parents=True, exist_ok=True)
    python = Path(sys.executable).resolve()
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    dynload = Path(sysconfig.get_config_var("DESTSHARED") or stdlib / "lib-dynload")

    for entry in stdlib.iterdir():
        if entry.name not in STDLIB_SKIP and entry.name not in {"site-packages", "dist-packages"}:
            place(entry)
    (OUT / stdlib.relative_to("/") / "site-packages").mkdir(parents=True, exist_ok=True)

    binaries = [python, *[Path(p).resolve() for p in map(shutil.which, EXTRA_BINARIES) if p]]
    for path in binaries:
        place(path)
    for link in ("/usr/bin/python3", "/usr/local/bin/python3"):  # what the virtualenv points at
        if Path(link).is_symlink() or Path(link).exists():
            place(Path(link))

    needed: set[Path] = set()
    for path in [*binaries, *elf_files(dynload), *elf_files(VENV)]:
        needed |= libraries(path)
    for name in DLOPENED:
        for libdir in ("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu",
                       "/lib/x86_64-linux-gnu", "/lib/aarch64-linux-gnu"):
            if (Path(libdir) / name).exists():
                needed.add(Path(libdir) / name)
    for lib in sorted(needed):
        if not str(lib).startswith(str(VENV)):
            place(lib)
            place(lib.resolve())

    for extra in ("/etc/ld.so.cache", "/etc/ssl/certs/ca-certificates.crt"):
        if Path(extra).exists():
            dest = OUT / extra.lstrip("/")
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(Path(extra).resolve(), dest)
    place(VENV)

    etc = OUT / "etc"
    (etc / "passwd").write_text("root:x:0:0:root:/root:/sbin/nologin\n"
                                "nonroot:x:65532:65532:nonroot:/tmp:/sbin/nologin\n")
    (etc / "group").write_text("root:x:0:\nnonroot:x:65532:\n")
    for d in ("tmp", "tls"):
        (OUT / d).mkdir(exist_ok=True)
    os.chmod(OUT / "tmp", 0o1777)  # noqa: S103 - /tmp: world-writable with the sticky bit, as always
    os.chown(OUT / "tls", 65532, 65532)
    return 0


if __name__ == "__main__":
    sys.exit(main())
