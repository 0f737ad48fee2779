"""The PostgreSQL connection SQLAlchemy's asyncpg dialect gets: a transaction's BEGIN can
carry a statement of its own, in the same round trip.

SQLAlchemy's adapter sends ``BEGIN`` on its own (asyncpg's simple query protocol) right
before the transaction's first statement, a round trip the turn waits on before anything
else. A turn's first statement is the lock on the user's conversation; it needs no
parameter but the user's id and no row back, only whether it locked one: so it goes in the
BEGIN's query (``BEGIN; SELECT 1 … FOR UPDATE``), whose last command's status asyncpg
returns ("SELECT 1", "SELECT 0"), and the turn's reads follow, after the lock is held
(:func:`execute_after_begin`). Everything else is SQLAlchemy's adapter unchanged: errors of
the BEGIN go through its handling (a dropped connection invalidates the pool), its commit and
rollback end the transaction.
"""

from __future__ import annotations

from typing import Any

import asyncpg  # type: ignore[import-untyped]
from sqlalchemy.dialects.postgresql.asyncpg import (
    AsyncAdapt_asyncpg_connection,
    AsyncAdapt_asyncpg_dbapi,
)
from sqlalchemy.engine import Connection, CursorResult
from sqlalchemy.util import await_


class _Begun:
    """The transaction a BEGIN of our own started (what the adapter keeps of asyncpg's
    ``Transaction``: commit and rollback)."""

    __slots__ = ("_connection",)

    def __init__(self, connection: Any) -> None:
        self._connection = connection  # asyncpg's

    async def start(self) -> None:
        raise RuntimeError("begun by a BEGIN of its own already")

    async def commit(self) -> None:
        await self._connection.execute("COMMIT")

    async def rollback(self) -> None:
        await self._connection.execute("ROLLBACK")


class _AdaptedConnection(AsyncAdapt_asyncpg_connection):
    """SQLAlchemy's asyncpg connection, sending ``begin_with`` with its next BEGIN."""

    __slots__ = ("begin_with", "begun")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[no-untyped-call]
        self.begin_with: str | None = None
        self.begun: str | None = None  # begin_with's status

    async def _start_transaction(self) -> None:
        statement, self.begin_with = self.begin_with, None
        if statement is None or self.isolation_level is not None or self.readonly \
                or self.deferrable:  # (a BEGIN with options: the adapter's own)
            await super()._start_transaction()  # type: ignore[no-untyped-call]
            return
        assert self._transaction is None
        connection: Any = self._connection  # asyncpg's
        try:
            self.begun = await connection.execute(f"BEGIN; {statement}")
        except BaseException as error:
            # Failed or cancelled: the BEGIN (and a lock) may have held on the server, so
            # the adapter's rollback (at the latest when the pool takes the connection back)
            # sends a ROLLBACK, harmless if no transaction is open.
            if not connection.is_closed():
                self._transaction = _Begun(connection)
            if isinstance(error, Exception):
                self._handle_exception(error)
            raise
        self._transaction = _Begun(connection)


class PostgresDBAPI(AsyncAdapt_asyncpg_dbapi):
    """SQLAlchemy's asyncpg DB-API (``module=`` of the engine), adapting connections with
    :class:`_AdaptedConnection`."""

    def __init__(self) -> None:
        super().__init__(asyncpg)  # type: ignore[no-untyped-call]

    def connect(self, *args: Any, **kwargs: Any) -> _AdaptedConnection:
        creator = kwargs.pop("async_creator_fn", asyncpg.connect)
        cache = kwargs.pop("prepared_statement_cache_size", 100)
        name = kwargs.pop("prepared_statement_name_func", None)
        connection: _AdaptedConnection = await_(_AdaptedConnection.create(
            self, creator(*args, **kwargs), prepared_statement_cache_size=cache,
            prepared_statement_name_func=name))
        return connection


def execute_after_begin(sync: Connection, first: str, statement: Any,
                        params: dict[str, Any]) -> tuple[CursorResult[Any], bool]:
    """Run ``statement`` as the first of ``sync``'s transaction, whose BEGIN carries
    ``first`` (SQL without parameters; its rows are not read) in the same round trip.
    Returns the result and whether ``first`` found a row. Where the BEGIN cannot carry it
    (not this module's connection, a transaction begun already) ``first`` is not run and
    found nothing: the caller takes its slower path."""
    adapted = sync.connection.dbapi_connection
    if not isinstance(adapted, _AdaptedConnection) or sync.in_transaction():
        return sync.execute(statement, params), False
    adapted.begin_with, adapted.begun = first, None
    try:
        result = sync.execute(statement, params)
    finally:
        status, adapted.begin_with, adapted.begun = adapted.begun, None, None
    return result, status is not None and status != "SELECT 0"
