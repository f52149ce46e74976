"""Credentials masked in URLs: an engine's, a judge's, an eval target's."""

import pytest

from evallens.credentials import masked_url


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("http://127.0.0.1:8000/v1", "http://127.0.0.1:8000/v1"),
        ("https://u:p@h.example/v1", "https://[REDACTED]@h.example/v1"),
        ("http://u:p@ss@h.example/v1", "http://[REDACTED]@h.example/v1"),  # the host follows the last "@"
        ("http://h.example/v1?next=a@b", "http://h.example/v1?next=a@b"),  # no user info: "@" after the host
        ("http://h/v1?api_key=k&api-version=2", "http://h/v1?api_key=[REDACTED]&api-version=2"),
        ("http://h/v1?Api%5FKey=k&sig=s&stream", "http://h/v1?Api%5FKey=[REDACTED]&sig=[REDACTED]&stream"),
        ("http://h/v1?", "http://h/v1?"),  # unchanged to the character: a fingerprint stays
        ("u:p@h.example/v1", "[REDACTED]@h.example/v1"),  # no scheme
        ("http://u:p@[::1/v1", "http://[REDACTED]@[::1/v1"),  # not parsed: masked as any text
    ],
)
def test_a_url_is_shown_with_its_credentials_masked_and_all_else_as_set(url: str, shown: str) -> None:
    assert masked_url(url) == shown
