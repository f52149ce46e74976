"""The ``evallens`` command line."""

from evallens.app.cli.app import create_cli, main

__all__ = ["create_cli", "main"]
