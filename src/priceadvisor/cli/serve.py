"""`priceadvisor serve`: the dashboard alone, read-only, without the scheduler."""

from __future__ import annotations

import signal
from typing import TYPE_CHECKING, Annotated

import typer

from priceadvisor.cli.common import UserError, err, state

if TYPE_CHECKING:
    from priceadvisor.config import Settings
    from priceadvisor.store.handle import Store

commands = typer.Typer()


@commands.command()
def serve(
    ctx: typer.Context,
    host: Annotated[
        str | None, typer.Option("--host", help="Bind address (default: daemon.health_host).")
    ] = None,
    port: Annotated[
        int | None,
        typer.Option("--port", min=0, max=65535, help="Port (default: daemon.health_port)."),
    ] = None,
) -> None:
    """Serve the web dashboard and its JSON API over the database, read-only, until Ctrl-C."""
    # asyncio and the web stack load only for this command, not for every CLI start.
    import asyncio

    from priceadvisor.service.logs import configure

    current = state(ctx)
    settings, store = current.settings, current.store
    configure(settings.log_level)
    with store.reader():
        pass  # a missing or outdated database is a one-line error now, not a 503 per page
    bind = host or settings.daemon.health_host
    chosen = settings.daemon.health_port if port is None else port
    asyncio.run(_serve(settings, store, bind, chosen))


async def _serve(settings: Settings, store: Store, host: str, port: int) -> None:
    import asyncio

    from priceadvisor.config import lookup_secret
    from priceadvisor.service import web
    from priceadvisor.service.dashboard import Dashboard

    dashboard = Dashboard(store, "read-only view (priceadvisor serve)")
    token = lookup_secret(settings, settings.daemon.web_token_env)
    try:
        server = await web.serve(host, port, web.build_app(dashboard.routes(), token))
    except OSError as exc:
        raise UserError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    if token is None and web.exposed(host):
        err.print(
            f"warning: the dashboard listens on {host} without a token: anyone who can reach "
            f"this machine can read it; set the secret {settings.daemon.web_token_env} "
            "(docs/dashboard.md)",
            highlight=False,
            markup=False,
        )
    first, *others = web.urls(host, server.port)
    also = f", also {', '.join(others)}" if others else ""
    err.print(f"dashboard on {first} (Ctrl-C stops{also})", highlight=False, markup=False)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    server.close()
    await server.wait_closed()
