"""Split brain, provoked: two Managers compete for one Lease on a real API server; the leader's
traffic goes through a TCP proxy this test controls and then blackholes (bytes dropped, no
reset, as in a network partition).  Each replica deletes objects in a loop while it acts, through
its real ``KubeClient`` (whose DELETEs the Manager fences).  The log of deletes that were *sent*,
with timestamps from both replicas, must show no overlap: the partitioned leader's last delete
goes out before the other replica's first, and before its own Lease could have been taken.
"""

from __future__ import annotations

import selectors
import socket
import threading
import time
import uuid
from dataclasses import dataclass, field
from urllib.parse import urlparse

import pytest

from kustodian.kube.client import KubeClient
from kustodian.kube.config import load_config
from kustodian.kube.errors import Fenced, KubeError, NotFound
from kustodian.kube.resources import CONFIG_MAPS, LEASES
from kustodian.runtime.manager import LeaderElection, Manager
from tests.conftest import KubeApi
from tests.support import wait_for

pytestmark = pytest.mark.api


class BlackholeProxy:
    """A loopback TCP forwarder that can drop every byte, both ways, without closing anything."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.blackholed = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        sel = selectors.DefaultSelector()
        self.listener.setblocking(False)
        sel.register(self.listener, selectors.EVENT_READ)
        peers: dict[socket.socket, socket.socket] = {}
        while not self._stop.is_set():
            for key, _ in sel.select(0.05):
                sock = key.fileobj
                assert isinstance(sock, socket.socket)
                if sock is self.listener:
                    client, _ = self.listener.accept()
                    if self.blackholed.is_set():  # held open, never connected upstream
                        peers[client] = client
                        sel.register(client, selectors.EVENT_READ)
                        continue
                    server = socket.create_connection(self.upstream)
                    peers[client], peers[server] = server, client
                    sel.register(client, selectors.EVENT_READ)
                    sel.register(server, selectors.EVENT_READ)
                    continue
                try:
                    data = sock.recv(65536)
                except OSError:
                    data = b""
                if not data:
                    other = peers.pop(sock, None)
                    sel.unregister(sock)
                    sock.close()
                    if other is not None and other is not sock and other in peers:
                        peers.pop(other, None)
                        sel.unregister(other)
                        other.close()
                    continue
                if self.blackholed.is_set():
                    continue  # dropped on the floor
                peers[sock].sendall(data)
        for sock in list(peers):
            sock.close()
        self.listener.close()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)


@dataclass
class Replica:
    name: str
    client: KubeClient  # the Manager's: the Lease, and (fenced) deletes
    manager: Manager
    act_client: KubeClient | None = None  # set: deletes take another path, fenced by manager.fence()
    sent: list[float] = field(default_factory=list)  # when each DELETE went out (it passed the fence)
    fenced: int = 0
    exit_code: int | None = None

    def act(self, namespace: str, stop: threading.Event) -> None:
        """The leader's work: delete one object after another, as node cleanup does."""
        i = 0
        while not stop.is_set():
            i += 1
            started = time.monotonic()
            try:
                if self.act_client is None:
                    self.client.delete(CONFIG_MAPS, f"victim-{self.name}-{i}", namespace)
                else:
                    if not self.manager.fence():  # what a controller calls before a destructive act
                        raise Fenced("fenced")
                    self.act_client.delete(CONFIG_MAPS, f"victim-{self.name}-{i}", namespace)
            except Fenced:
                self.fenced += 1
                stop.wait(0.02)
                continue
            except NotFound:
                pass
            except KubeError:
                pass  # sent, but no answer (partitioned): it still counts as an act
            self.sent.append(started)
            stop.wait(0.02)


def replica(name: str, server: str, kubeconfig: str, namespace: str, lease: str) -> Replica:
    client = KubeClient(load_config(kubeconfig, server))
    le = LeaderElection(namespace=namespace, lease=lease, identity=name, lease_duration=3.0,
                        renew_deadline=2.0, retry_period=0.5)
    manager = Manager(client, name=name, leader_election=le, sync_timeout=10)
    r = Replica(name, client, manager)
    manager.add_loop(f"{name}-act", lambda stop: r.act(namespace, stop))
    return r


@pytest.mark.parametrize("partition", ["all-traffic", "lease-only"])
def test_a_partitioned_leader_stops_acting_before_another_replica_starts(kube_api: KubeApi, namespace: str,
                                                                         partition: str) -> None:
    """``all-traffic``: every call of the leader hangs.  ``lease-only``: its renewals hang but its
    deletes still reach the API server (an asymmetric partition), so only the fence can stop it."""
    direct = load_config(str(kube_api.kubeconfig)).server
    up = urlparse(direct)
    proxy = BlackholeProxy((up.hostname or "127.0.0.1", up.port or 443))
    lease = f"ctl-{uuid.uuid4().hex[:6]}"
    a = replica("a", f"https://127.0.0.1:{proxy.port}", str(kube_api.kubeconfig), namespace, lease)
    b = replica("b", direct, str(kube_api.kubeconfig), namespace, lease)
    if partition == "lease-only":
        a.act_client = KubeClient(load_config(str(kube_api.kubeconfig)))
    stops = {r.name: threading.Event() for r in (a, b)}

    def run(r: Replica) -> threading.Thread:
        def body() -> None:
            r.exit_code = r.manager.run(stops[r.name])
        t = threading.Thread(target=body, daemon=True)
        t.start()
        return t

    threads = [run(a)]
    try:
        wait_for(lambda: len(a.sent) >= 5, timeout=20, what="replica a leads and acts")
        threads.append(run(b))
        renewals: set[str] = set()

        def renewed_by_a_three_times() -> bool:  # b keeps trying the Lease all along (every 0.5 s)
            renewals.add(str(kube_api.client.get(LEASES, lease, namespace)["spec"].get("renewTime")))
            return len(renewals) > 3

        wait_for(renewed_by_a_three_times, "three renewals of the Lease while b runs", timeout=20)
        assert b.sent == [] and a.manager.acting  # b waits for the Lease
        assert a.client.timeout <= 1.0  # bounded by lease - renew deadline at start

        cut = time.monotonic()
        proxy.blackholed.set()
        wait_for(lambda: len(b.sent) >= 5, timeout=20, what="replica b takes over and acts")
        wait_for(lambda: a.exit_code is not None, timeout=10, what="replica a gives up")
    finally:
        for s in stops.values():
            s.set()
        for t in threads:
            t.join(15)
        proxy.blackholed.clear()
        proxy.stop()
        a.client.close()
        b.client.close()
        if a.act_client is not None:
            a.act_client.close()

    a_last, b_first = max(a.sent), min(b.sent)
    log = sorted([(t, "a") for t in a.sent] + [(t, "b") for t in b.sent])
    print(f"{partition}: cut at {cut:.3f}; a sent {len(a.sent)} deletes, last at +{a_last - cut:.3f} s; b's first at "
          f"+{b_first - cut:.3f} s; gap {b_first - a_last:.3f} s; a refused by its fence {a.fenced} times; "
          f"a exit code {a.exit_code}")
    # the log of acts: every act of a precedes every act of b, with room to spare
    assert [who for _, who in log] == ["a"] * len(a.sent) + ["b"] * len(b.sent)
    assert b_first - a_last > 0.5
    # a stopped within its renew deadline of the cut (2 s, plus one renew period of slack)
    assert a_last - cut < 2.5
    if partition == "lease-only":  # deletes kept flowing after the cut until the fence closed
        assert a_last - cut > 1.0
    assert a.exit_code == 1
