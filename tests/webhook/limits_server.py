"""The real webhook server in a process of its own, for tests that measure it (RSS, latency).

``python -m tests.webhook.limits_server PORT TLS_DIR LIMITS_JSON``: serves ``create_app`` with
one validator (allow) through ``build_server`` with those ``RequestLimits``, prints ``ready``.
A process of its own so the test's clients share neither its GIL nor its memory.
"""

from __future__ import annotations

import json
import sys
import threading

from kustodian.webhook.app import create_app
from kustodian.webhook.registry import Registry
from kustodian.webhook.review import Answer
from kustodian.webhook.server import RequestLimits, TLSFiles, build_server
from tests.support import wait_for


def main() -> None:
    port, tls_dir, limits_json = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    limits = RequestLimits(**json.loads(limits_json))
    registry = Registry()
    registry.validate("ConfigMap", ["DELETE"], lambda req: Answer())
    app = create_app(registry, max_body_bytes=limits.max_body_bytes)
    server, _ = build_server(app, host="127.0.0.1", port=port,
                             tls=TLSFiles(f"{tls_dir}/tls.crt", f"{tls_dir}/tls.key"), limits=limits)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    wait_for(lambda: server.started, "the webhook server to start", timeout=60, poll=0.01)
    print("ready", flush=True)
    thread.join()


if __name__ == "__main__":
    main()
