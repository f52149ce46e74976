"""The ``evallens`` command line."""

from evallens.cli.app import create_cli, main

__all__ = ["create_cli", "main"]
