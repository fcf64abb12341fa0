"""Hold many TLS connections to a server the slow way, in a process of its own.

``python -m tests.webhook.slowloris PORT CA N MODE SECONDS``: opens ``N`` TLS connections
(handshakes 50 at a time), prints ``connected N``, then sends one byte per connection every
second for ``SECONDS`` (MODE ``headers``: a request line and headers that never end;
``body``: full headers announcing 1000 bytes, then the body one byte at a time; ``idle``:
nothing at all) and finally prints a JSON summary: how many connections the *server* closed
and after how long (seconds since each was connected).
"""

from __future__ import annotations

import asyncio
import json
import ssl
import sys
import time


async def hold(port: int, ctx: ssl.SSLContext, mode: str, seconds: float, gate: asyncio.Semaphore,
               connected: list[int], closed_after: list[float], all_connected: asyncio.Event, n: int) -> None:
    async with gate:
        try:
            reader, writer = await asyncio.wait_for(
                asyncio.open_connection("127.0.0.1", port, ssl=ctx, server_hostname="127.0.0.1"), 30)
        except (OSError, TimeoutError):
            return
    connected.append(1)
    if len(connected) == n:
        all_connected.set()
    start = time.monotonic()
    if mode == "headers":
        stream = b"POST /validate HTTP/1.1\r\nHost: x\r\n" + b"X-Slow: " + b"a" * 10_000
    elif mode == "body":
        writer.write(b"POST /validate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Content-Length: 1000\r\n\r\n")
        stream = b"{" * 1000
    else:
        stream = b""
    i = 0

    async def read_eof() -> None:
        while await reader.read(4096):
            pass

    eof = asyncio.ensure_future(read_eof())
    end = start + seconds
    while time.monotonic() < end and not eof.done():
        if stream and i < len(stream):
            try:
                writer.write(stream[i:i + 1])
            except (OSError, RuntimeError):
                break
            i += 1
        await asyncio.wait([eof], timeout=1.0)
    if eof.done():
        closed_after.append(round(time.monotonic() - start, 3))
    else:
        eof.cancel()
    writer.close()


async def main() -> None:
    port, ca, n, mode, seconds = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4], float(sys.argv[5])
    ctx = ssl.create_default_context(cafile=ca)
    gate = asyncio.Semaphore(50)
    connected: list[int] = []
    closed_after: list[float] = []
    all_connected = asyncio.Event()
    tasks = [asyncio.ensure_future(hold(port, ctx, mode, seconds, gate, connected, closed_after, all_connected, n))
             for _ in range(n)]

    async def over() -> None:  # some connections failed: the count is final once every task is over
        await asyncio.gather(*tasks)
        all_connected.set()

    watcher = asyncio.ensure_future(over())
    await all_connected.wait()
    print(f"connected {len(connected)}", flush=True)
    await watcher
    print(json.dumps({"connected": len(connected), "closed_by_server": len(closed_after),
                      "closed_after_max": max(closed_after, default=None),
                      "closed_after_min": min(closed_after, default=None)}), flush=True)


if __name__ == "__main__":
    asyncio.run(main())
