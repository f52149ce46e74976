"""SQLAlchemy engines and sessions over psycopg 3."""

from sqlalchemy import URL, Engine, create_engine, make_url, text
from sqlalchemy.exc import ArgumentError, SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from evallens.errors import DatabaseUnavailable


def parse_url(url: str) -> URL:
    """``url`` parsed, or ``DatabaseUnavailable`` in one line (never echoing it: it may hold a password)."""
    try:
        return make_url(url)
    except (ArgumentError, ValueError):
        raise DatabaseUnavailable(
            "the database URL cannot be parsed; it looks like postgresql://user:password@host:5432/dbname"
        ) from None


def postgres_url(url: str) -> URL:
    """``url`` parsed, or ``DatabaseUnavailable`` in one line when it is not a PostgreSQL URL (libpq's
    ``postgres://`` spelling included)."""
    parsed = parse_url(url)
    if parsed.get_backend_name() not in ("postgresql", "postgres"):
        raise DatabaseUnavailable(f"not a PostgreSQL URL: {parsed.render_as_string()}")
    return parsed


def sqlalchemy_url(url: str) -> str:
    """Turn a libpq-style ``postgresql://`` URL into one that selects the psycopg 3 driver."""
    return postgres_url(url).set(drivername="postgresql+psycopg").render_as_string(hide_password=False)


def libpq_url(url: str) -> str:
    """The same URL without the SQLAlchemy driver suffix, for psycopg.connect."""
    return postgres_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


def create_db_engine(
    url: str, *, connect_timeout_s: int = 5, pool_size: int = 5, pool_timeout_s: float = 30
) -> Engine:
    """An engine for ``url``; connections time out after ``connect_timeout_s`` seconds, and waiting for
    one of the pool's after ``pool_timeout_s`` (``sqlalchemy.exc.TimeoutError``)."""
    return create_engine(
        sqlalchemy_url(url),
        pool_size=pool_size,
        pool_timeout=pool_timeout_s,
        pool_pre_ping=True,
        connect_args={"connect_timeout": connect_timeout_s},
    )


def create_session_factory(engine: Engine) -> sessionmaker[Session]:
    """Sessions bound to ``engine``; callers own the transaction."""
    return sessionmaker(engine, expire_on_commit=False)


def ping(engine: Engine) -> str:
    """Connect once and return the server version, or raise ``DatabaseUnavailable`` in one line."""
    try:
        with engine.connect() as connection:
            return str(connection.execute(text("SHOW server_version")).scalar_one())
    except SQLAlchemyError as error:
        reason = str(getattr(error, "orig", error)).strip().splitlines()[0]
        url = engine.url.render_as_string(hide_password=True)
        raise DatabaseUnavailable(f"cannot connect to PostgreSQL at {url}: {reason}") from None
