"""Run the dev server: python -m web [--host 127.0.0.1] [--port 8000]."""

from __future__ import annotations

import argparse

import uvicorn

from web.app import create_app
from web.settings import Settings


def main(argv: list[str] | None = None) -> None:
    """Parse the command line and serve until interrupted."""
    env = Settings.from_env()
    parser = argparse.ArgumentParser(prog="python -m web", description="pyodide-webnn dev server")
    parser.add_argument("--host", default=env.host, help="interface to bind (default: %(default)s)")
    parser.add_argument("--port", type=int, default=env.port, help="TCP port (default: %(default)s)")
    parser.add_argument("--log-level", default="info", help="uvicorn log level (default: %(default)s)")
    args = parser.parse_args(argv)
    settings = Settings(host=args.host, port=args.port, cache_dir=env.cache_dir, repo_root=env.repo_root)
    print(f"pyodide-webnn: serving http://{settings.host}:{settings.port}/  (assets: {settings.pyodide_dir})")
    uvicorn.run(create_app(settings), host=settings.host, port=settings.port, log_level=args.log_level)


if __name__ == "__main__":
    main()
