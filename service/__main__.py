"""python -m service {serve,migrate,openapi,keys create,plan,matrix,offload,speed,slack-ask}."""

import argparse
import json
import math
import sys
from typing import Any

from service.settings import Settings


def openapi_json() -> str:
    """The live spec as openapi/openapi.json holds it: sorted keys, stable, newline-terminated."""
    from service.app import create_app

    schema = create_app(Settings()).openapi_schema.to_schema()
    return json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


async def _create_key(settings: Settings, principal: str, role: str) -> str:
    from service.auth import create_key
    from service.db import create_engine

    engine = create_engine(settings.database_url)
    try:
        from sqlalchemy.ext.asyncio import async_sessionmaker

        async with async_sessionmaker(engine)() as session, session.begin():
            return await create_key(session, principal, role)  # type: ignore[arg-type]
    finally:
        await engine.dispose()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m service", description=__doc__)
    # prog given: argparse would build a help formatter to compute it, which imports shutil
    # and with it bz2 and lzma (a tenth of the offline plan's start-up).
    commands = parser.add_subparsers(dest="command", required=True, prog=parser.prog)
    serve = commands.add_parser("serve", help="run the HTTP service (uvicorn)")
    serve.add_argument("--host", help="default: HOST or 127.0.0.1")
    serve.add_argument("--port", type=int, help="default: PORT or 8000")
    commands.add_parser("migrate", help="upgrade the database (DATABASE_URL) to the head revision")
    commands.add_parser("openapi", help="print the OpenAPI spec (what openapi/openapi.json holds)")
    accuracy = commands.add_parser(
        "accuracy", help="the vLLM method against the collected start-up logs: every case"
    )
    accuracy.add_argument(
        "--markdown",
        action="store_true",
        help="print the report as markdown (docs/accuracy.md, or docs/serving-accuracy.md)",
    )
    accuracy.add_argument(
        "--serving",
        action="store_true",
        help="the serving-speed model against the public benchmark runs instead",
    )
    keys = commands.add_parser("keys", help="API keys").add_subparsers(
        dest="action", required=True, prog=f"{parser.prog} keys"
    )
    create = keys.add_parser("create", help="create a key; prints it on the last line")
    create.add_argument("--principal", required=True)
    create.add_argument("--role", required=True, choices=["viewer", "planner", "reviewer", "admin"])
    from service import cli, cli_speed
    from service.chatops import ask

    cli.add_commands(commands)
    cli_speed.add_command(commands)
    ask.add_command(commands)
    args = parser.parse_args(argv)
    if args.command in cli.COMMANDS:  # plan, matrix, offload: locally or against --url
        return cli.run(args)
    if args.command == "speed":
        return cli_speed.run(args)
    if args.command == "slack-ask":
        return ask.run(args)
    if args.command == "accuracy" and args.serving:
        from service.accuracy import serving, serving_report

        results = serving.report()
        if args.markdown:
            print(serving_report.render_markdown(results))
        else:
            print(serving_report.render(results))
        return 0
    if args.command == "accuracy":
        from service.accuracy.vllm import report
        from service.accuracy.vllm_report import render, render_markdown

        rep = report()
        if args.markdown:
            sys.stdout.write(render_markdown(rep))
        else:
            print(render(rep))
        return 0
    settings = Settings.from_env()

    if args.command == "migrate":
        from service.db import migrate

        migrate(settings.database_url)
    elif args.command == "openapi":
        sys.stdout.write(openapi_json())
    elif args.command == "keys":
        import asyncio

        key = asyncio.run(_create_key(settings, args.principal, args.role))
        print(f"created a {args.role} key for {args.principal}; it is shown once:")
        print(key)
    elif args.command == "serve":
        import uvicorn

        from service.app import create_app

        if settings.is_default_sqlite:  # one command on a fresh clone: migrate the file first
            from service.db import migrate

            migrate(settings.database_url)
        options: dict[str, Any] = {
            "host": args.host or settings.host,
            "port": args.port or settings.port,
            "log_level": settings.log_level.lower(),
            "log_config": None,  # keep create_app's JSON logging; one line per request from it
            "access_log": False,
            # SIGTERM: stop accepting, let in-flight requests finish (Kubernetes waits
            # terminationGracePeriodSeconds, set above this), then exit.
            "timeout_graceful_shutdown": math.ceil(settings.shutdown_grace_s),
            "proxy_headers": False,
        }
        if settings.workers > 1:
            from service.workers import serve_workers

            serve_workers(settings.workers, options)
        else:
            uvicorn.run(create_app(settings), **options)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
