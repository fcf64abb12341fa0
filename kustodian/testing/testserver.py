"""Start and stop ``kube-testserver`` on free ports, each run in its own directory.

The expensive part (downloading Debian's Go sources and building the server, ~5 min
cold) is shared in ``~/.cache/kube-testserver`` and guarded by a file lock; each
``TestServer`` gets its own ``KTS_WORK`` whose ``root`` and ``bin`` link to that
build and whose ``run`` (etcd data, certificates, kubeconfig) is private, so
parallel sessions never share state.
"""

from __future__ import annotations

import base64
import fcntl
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

SHARED_BUILD = Path(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")) / "kube-testserver"


def find_script() -> Path | None:
    """``$KUSTODIAN_KTS_DIR`` or ``<repo>/../shared/kube-testserver``."""
    env = os.environ.get("KUSTODIAN_KTS_DIR")
    candidates = [Path(env)] if env else []
    here = Path(__file__).resolve()
    candidates += [p.parent / "shared" / "kube-testserver" for p in here.parents]
    for cand in candidates:
        script = cand / "kube-testserver.sh"
        if script.is_file():
            return script
    return None


def free_port(pair: bool = False) -> int:
    """A free loopback port (``pair``: port and port+1 both free, for etcd's peer port)."""
    for _ in range(50):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
        if not pair:
            return port
        with socket.socket() as s2:
            try:
                s2.bind(("127.0.0.1", port + 1))
            except OSError:
                continue
            return port
    raise RuntimeError("no free port pair found")


def ensure_built(script: Path) -> None:
    SHARED_BUILD.mkdir(parents=True, exist_ok=True)
    binary = SHARED_BUILD / "bin" / "kube-testserver"
    if binary.exists():
        return
    with open(SHARED_BUILD / ".kustodian-build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if binary.exists():
            return
        env = {**os.environ, "KTS_WORK": str(SHARED_BUILD)}
        subprocess.run([str(script), "setup"], check=True, env=env)


@dataclass
class TestServer:
    script: Path
    work: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="kts-")))
    port: int = field(default_factory=free_port)
    etcd_port: int = field(default_factory=lambda: free_port(pair=True))
    token: str = "kustodian-test-token"
    # "RBAC" enforces RBAC like kube-apiserver (the admin kubeconfig is in system:masters);
    # the default allows everything
    authorization: str = "AlwaysAllow"

    __test__ = False  # not a pytest class

    @property
    def kubeconfig(self) -> Path:
        return self.work / "run" / "kubeconfig"

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    @property
    def etcd_url(self) -> str:
        return f"http://127.0.0.1:{self.etcd_port}"

    def _env(self) -> dict[str, str]:
        return {**os.environ, "KTS_WORK": str(self.work), "KTS_PORT": str(self.port),
                "KTS_ETCD_PORT": str(self.etcd_port), "KTS_TOKEN": self.token,
                "KTS_AUTHORIZATION": self.authorization}

    def kubeconfig_for(self, user: str, *groups: str) -> Path:
        """A kubeconfig with a client certificate for ``user`` (e.g. ``system:serviceaccount:NS:NAME``),
        so a component runs under that identity, with RBAC enforced in ``authorization="RBAC"`` mode."""
        safe = "".join(c if c.isalnum() else "-" for c in user)
        out = self.work / "kubeconfigs" / f"{safe}.kubeconfig"
        out.parent.mkdir(parents=True, exist_ok=True)
        self._sh("kubeconfig", str(out), user, *groups)
        return out

    def _sh(self, *args: str) -> None:
        proc = subprocess.run([str(self.script), *args], env=self._env(), capture_output=True, text=True,
                              check=False)
        if proc.returncode != 0:
            log = self.work / "run" / "server.log"
            tail = log.read_text()[-3000:] if log.exists() else ""
            raise RuntimeError(f"kube-testserver {' '.join(args)} failed ({proc.returncode}):\n"
                               f"{proc.stderr[-3000:]}\n{tail}")

    def start(self) -> TestServer:
        ensure_built(self.script)
        for name in ("root", "bin"):
            link = self.work / name
            if not link.exists():
                link.symlink_to(SHARED_BUILD / name)
        self._sh("start")
        return self

    def stop(self) -> None:
        pid_file = self.work / "run" / "server.pid"
        if pid_file.exists():  # don't wait for the API server's graceful drain of open watches
            pid = int(pid_file.read_text())
            try:
                os.kill(pid, signal.SIGTERM)
                if not _wait_exit(pid, 3):
                    os.kill(pid, signal.SIGKILL)
                    _wait_exit(pid, 10)
            except ProcessLookupError:
                pass
            pid_file.unlink(missing_ok=True)
        self._sh("stop")

    def restart_apiserver(self, between: Any = None, *, grace: float = 3.0) -> None:
        """Stop only the API server (SIGTERM, SIGKILL after ``grace``; etcd keeps running),
        call ``between()`` while it is down, then start it again."""
        pid_file = self.work / "run" / "server.pid"
        pid = int(pid_file.read_text())
        os.kill(pid, signal.SIGTERM)
        if not _wait_exit(pid, grace):
            os.kill(pid, signal.SIGKILL)
            if not _wait_exit(pid, 10):
                raise RuntimeError(f"kube-testserver (pid {pid}) did not exit")
        pid_file.unlink(missing_ok=True)
        if between is not None:
            between()
        self._sh("start")

    def destroy(self) -> None:
        try:
            self.stop()
        finally:
            shutil.rmtree(self.work, ignore_errors=True)

    # -- etcd, for failure injection (compaction -> 410 Gone) ----------------------------------

    def etcd(self, path: str, body: dict[str, Any], *, timeout: float = 10.0) -> dict[str, Any]:
        resp = httpx.post(f"{self.etcd_url}{path}", json=body, timeout=timeout)
        resp.raise_for_status()
        result: dict[str, Any] = resp.json()
        return result

    def etcd_bump_and_compact(self) -> int:
        """Advance etcd's revision with a scratch key, then compact history up to it."""
        key = base64.b64encode(b"/kustodian-test/bump").decode()
        rev = int(self.etcd("/v3/kv/put", {"key": key, "value": base64.b64encode(b"x").decode()})
                  ["header"]["revision"])
        # physical: answered once the compaction is done: more than 10 s at a million keys
        self.etcd("/v3/kv/compaction", {"revision": str(rev), "physical": True}, timeout=900.0)
        return rev

    def etcd_delete(self, key: str) -> None:
        self.etcd("/v3/kv/deleterange", {"key": base64.b64encode(key.encode()).decode()})


def _wait_exit(pid: int, timeout: float) -> bool:
    """True once ``pid`` is gone or a zombie (its sockets are closed either way)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as fh:
                state = fh.read().rpartition(")")[2].split()[0]
        except (FileNotFoundError, ProcessLookupError, IndexError):
            return True
        if state in ("Z", "X"):
            return True
        time.sleep(0.05)
    return False
