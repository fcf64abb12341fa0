"""``kustodian`` with a delay in front of each DELETE review: the performance gate's self-test only.

``python bench/gate_delay.py webhook ...`` runs the real command after wrapping the app the
webhook builds in an ASGI layer that sleeps ``$BENCH_GATE_DELAY_MS`` before passing a
``/validate`` request whose review is a DELETE on (blocking the event loop, as slower decision
code would).  It is installed from outside, in this script, so the shipped code carries no hook;
``python -m bench.gate --self-test`` starts HEAD's server through it and must then fail.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Message = MutableMapping[str, Any]
DELAY = float(os.environ.pop("BENCH_GATE_DELAY_MS")) / 1000  # not left for the settings to see


class DelayDeletes:
    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Message, receive: Callable[[], Awaitable[Message]],
                       send: Callable[[Message], Awaitable[None]]) -> None:
        if scope["type"] != "http" or scope["path"] != "/validate":
            await self.app(scope, receive, send)
            return
        messages, body, more = [], b"", True
        while more:
            message = await receive()
            messages.append(message)
            body += message.get("body", b"")
            more = bool(message.get("more_body"))
        if b'"operation": "DELETE"' in body or b'"operation":"DELETE"' in body:
            time.sleep(DELAY)  # noqa: ASYNC251 - on purpose: a slower decision blocks the loop too
        pending = iter(messages)

        async def replay() -> Message:
            return next(pending, None) or await receive()

        await self.app(scope, replay, send)


def main() -> int:
    import kustodian.webhook.main as webhook
    from kustodian.cli import main as cli

    build = getattr(webhook, "create_app")  # noqa: B009 - the name main imported, replaced there

    def create_app(*args: Any, **kwargs: Any) -> Any:
        app = build(*args, **kwargs)
        app.add_middleware(DelayDeletes)
        return app

    setattr(webhook, "create_app", create_app)  # noqa: B010
    return int(cli(sys.argv[1:]) or 0)


if __name__ == "__main__":
    raise SystemExit(main())
