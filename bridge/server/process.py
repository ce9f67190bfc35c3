"""The bridge's process: ``raydap serve`` from settings to a bridge that serves until it is
stopped (SIGINT, SIGTERM) or replaced (SIGHUP starts the replacement; ``--replace`` takes over
from a running bridge), ready for systemd, with what it prints once it listens. The command
line (:mod:`raydap.bridge.client.cli`) only reads the flags into settings and calls
:func:`serve`."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys

from pydantic import ValidationError

from raydap.bridge.cluster.locate import ClusterNotFound, locate
from raydap.bridge.server import directories, handover, supervisor
from raydap.bridge.server.auth import TokenError
from raydap.bridge.server.bridge import Bridge, ListenError, prepare_directories
from raydap.bridge.server.directories import DirectoryError
from raydap.bridge.server.replace import Reloader, bridge_to_replace, reload_command
from raydap.bridge.server.settings import Settings, platform_variables


def serve(settings: Settings, *, replace: int | None = None, argv: list[str] | None = None) -> int:
    """Serve until stopped; the exit status. ``replace``: take over from the running bridge
    (0: the only one here). ``argv``: this command's arguments, which SIGHUP runs again to
    start a replacement (None: no replacing by SIGHUP)."""
    for name in platform_variables():
        print(f"raydap: ignoring {name}={os.environ[name]}: a platform's address of a Service "
              "named like raydap, not a raydap setting", file=sys.stderr)  # fmt: skip
    try:
        prepare_directories(settings)  # before Ray is looked for: a bad one fails at once
        cluster = locate(settings.address, settings.dashboard_url)
        bridge = Bridge(settings, cluster)
    except (ClusterNotFound, TokenError, directories.DirectoryError) as exc:
        print(f"raydap: {exc}", file=sys.stderr)
        return 2
    if settings.no_token:
        print(f"raydap: WARNING: --no-token: anyone who can reach {settings.host} (every user "
              "of this machine, and web pages through DNS rebinding if the Host check is "
              "bypassed) can run code in every paused Ray worker", file=sys.stderr)  # fmt: skip
    raise_open_file_limit()
    again = None if argv is None else reload_command(argv, os.getpid())
    return asyncio.run(serve_until_stopped(bridge, replace=replace, reload_command=again))


def raise_open_file_limit() -> None:
    """Each held worker is a socket: lift the soft limit (often 1,024) to the hard one."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and (hard == resource.RLIM_INFINITY or soft < hard):
        target = 1 << 20 if hard == resource.RLIM_INFINITY else hard
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))


async def serve_until_stopped(
    bridge: Bridge, *, replace: int | None = None, reload_command: list[str] | None = None
) -> int:
    """Start the bridge and serve until SIGINT or SIGTERM (what `raydap serve` does), or until
    a new bridge takes over. ``replace``: take over from the running bridge (0: the only one
    here). ``reload_command``: what SIGHUP starts to take over from this one."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    if reload_command is not None:
        loop.add_signal_handler(signal.SIGHUP, Reloader(reload_command, bridge.replaced).reload)
    received = None
    if replace is not None:
        try:
            path = bridge_to_replace(bridge.settings.runtime_dir, replace or None)
            received = await asyncio.to_thread(handover.take, path)
        except (handover.HandoverError, OSError, ValidationError) as exc:
            print(f"raydap: cannot replace the running bridge: {exc}", file=sys.stderr)
            return 2
    try:
        await bridge.start(received)  # stops what it started if it fails
    except BaseException as exc:
        if received is not None:
            received.close()  # the old bridge takes everything back
        why = start_failure(exc)
        if why is None:
            raise
        print(f"raydap: {why}", file=sys.stderr)
        return 2
    try:
        if received is not None:
            await asyncio.to_thread(received.acknowledge)
            print(f"raydap: took over from pid {received.offer.pid} with "
                  f"{len(received.offer.workers)} workers held", file=sys.stderr)  # fmt: skip
        supervisor.ready()
        print(serve_banner(bridge), flush=True)
        stopping = asyncio.ensure_future(stop.wait())
        replaced = asyncio.ensure_future(bridge.replaced.wait())
        await asyncio.wait({stopping, replaced}, return_when=asyncio.FIRST_COMPLETED)
        stopping.cancel()
        replaced.cancel()
    finally:
        await stop_within(bridge, STOP_WITHIN)
    return 0


#: A stop (SIGTERM, systemd's, Kubernetes') ends the process within this many seconds,
#: whatever Ray does; systemd's and the kubelet's own patience is longer.
STOP_WITHIN = 8.0


async def stop_within(bridge: Bridge, seconds: float) -> None:
    """Stop the bridge; what is left after ``seconds`` (a call into Ray that never returns)
    is abandoned, said, and ends with the process."""
    try:
        await asyncio.wait_for(bridge.stop(), seconds)
    except asyncio.TimeoutError:
        print(f"raydap: the bridge did not stop within {seconds:g} s (waiting on Ray?); "
              "leaving what is left", file=sys.stderr)  # fmt: skip


def start_failure(exc: BaseException) -> str | None:
    """What to tell a person whose bridge could not start, or None for a bug (raised)."""
    if isinstance(exc, DirectoryError | ListenError):
        return str(exc)
    if isinstance(exc, OSError):  # a certificate or key that cannot be read ...
        return f"cannot start: {exc}"
    return None


def serve_banner(bridge: Bridge, *, terminal: bool | None = None) -> str:
    """What ``raydap serve`` prints once it listens: where, and how to get in. The login link
    holds the token, so it is printed only to a terminal, never to a journal or a log file."""
    dap_host, dap_port = bridge.dap_address
    tls = " (TLS)" if bridge.settings.tls else ""
    lines = [
        f"raydap bridge: HTTP {bridge.url}  DAP {dap_host}:{dap_port}{tls}  "
        f"dashboard {bridge.cluster.dashboard_url}"
    ]
    secret = bridge.debug_secret
    if secret is not None:
        lines.append(
            login_line(bridge, secret, sys.stdout.isatty() if terminal is None else terminal)
        )
    lines.append(
        "attach: `raydap list`, `raydap attach ID` on this machine (they read the connection "
        f"file {bridge.connection_file}); DAP clients send the token as the attach argument "
        '"token"; the VS Code extension asks for it once (Ray: Set Bridge Token)'
        if secret is not None
        else "attach: `raydap list`, `raydap attach ID`; any DAP client to the DAP port"
    )
    return "\n".join(lines)


def login_line(bridge: Bridge, secret: str, terminal: bool) -> str:
    if terminal:
        return f"web page: {bridge.url}/?token={secret}"
    return (
        f"web page: {bridge.url}/ (log in with the token in {bridge.connection_file}; the login "
        "link is printed only to a terminal)"
    )
