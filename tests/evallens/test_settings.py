"""Every setting is documented and read with the EVALLENS_ prefix."""

import inspect
from pathlib import Path

import pytest
from pydantic_settings import BaseSettings

import evallens.settings as settings_package
from evallens.settings import DatabaseSettings


def settings_classes() -> list[type[BaseSettings]]:
    return [
        value
        for value in vars(settings_package).values()
        if inspect.isclass(value) and issubclass(value, BaseSettings)
    ]


@pytest.mark.parametrize("settings_class", settings_classes(), ids=lambda cls: cls.__name__)
def test_every_field_has_a_description(settings_class: type[BaseSettings]) -> None:
    assert settings_class.model_config.get("env_prefix") == "EVALLENS_"
    undocumented = [name for name, field in settings_class.model_fields.items() if not field.description]
    assert undocumented == []


def test_database_settings_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVALLENS_DATA_DIR", "~/somewhere")
    monkeypatch.setenv("EVALLENS_DATABASE_URL", "postgresql://u@h/db")
    settings = DatabaseSettings()
    assert settings.database_url == "postgresql://u@h/db"
    assert settings.data_dir == Path("~/somewhere").expanduser()
    assert settings.embedded_pgdata == Path("~/somewhere").expanduser() / "postgres"
