"""Shared pieces of the settings classes.

The rest of the code never touches ``os.environ``: it asks for a settings object, or for a copy of
the environment to hand to a child process.
"""

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated

from pydantic import AfterValidator, BeforeValidator
from pydantic_settings import SettingsConfigDict

ENV_PREFIX = "EVALLENS_"

DEFAULT_DATA_DIR = Path("~/.evallens")


def _named_directory(value: object) -> object:
    # Path("") is the current directory: EVALLENS_DATA_DIR= (set, but empty) started a PostgreSQL cluster
    # wherever the command ran
    if isinstance(value, str) and not value.strip():
        raise ValueError("must name a directory, not be empty (unset it for the default ~/.evallens)")
    return value


# A data directory setting: an empty value is refused rather than read as the current directory.
DataDir = Annotated[Path, BeforeValidator(_named_directory)]


def project_name_problem(name: str) -> str | None:
    """Why ``name`` cannot name a project (None: it can): blank, or with whitespace at either end, which
    would silently be another project beside the one meant ("alpha " is not "alpha")."""
    if not name.strip():
        return "a project needs a name, not an empty or blank one"
    if name != name.strip():
        return f"project name {name!r} starts or ends with whitespace; did you mean {name.strip()!r}?"
    return None


def _project_name(value: str) -> str:
    problem = project_name_problem(value)
    if problem is not None:
        raise ValueError(problem)
    return value


# A setting naming a project: refused when blank or padded with whitespace.
ProjectName = Annotated[str, AfterValidator(_project_name)]


def settings_config(**overrides: object) -> SettingsConfigDict:
    """The configuration every evallens settings class shares: ``EVALLENS_`` prefix, no extras."""
    config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="ignore", validate_default=True)
    config.update(overrides)  # type: ignore[typeddict-item]
    return config


def read_environment(name: str) -> str | None:
    """Read one variable that is not an evallens setting (e.g. a third-party tool's own knob)."""
    return os.environ.get(name)


def child_environment(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """A copy of this process's environment, with ``extra`` on top, for a child process."""
    environment = dict(os.environ)
    environment.update(extra or {})
    return environment


def set_process_environment(values: Mapping[str, str], *, override: bool = False) -> None:
    """Set variables that third-party libraries read from the environment (vLLM, torch, ragas)."""
    for name, value in values.items():
        if override or name not in os.environ:
            os.environ[name] = value
