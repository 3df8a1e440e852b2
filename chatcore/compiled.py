"""Statements of a fixed shape, built once per database and sent again with each call's values.

A query set builds its statement on every evaluation: it clones the query, resolves its joins, lists and
quotes every column of every table it selects, and compiles its conditions. For the statements that every
reply and every gateway call sends (a channel's lock with the user's cursor, the lookups of a resent
history), that building costs more of the process's CPU than the database spends answering. Their shape
never changes (the same tables, columns and conditions; only the values differ), so a `FixedQuery` has
Django's compiler build the statement once per database from the query set that describes it, and each
call sends that text with its own values. The rows become instances exactly as the query set makes them
(the same converters, `Model.from_db`, the related objects of `select_related` and the annotations set on
each), so a caller cannot tell the two apart.

The values a call varies are named when the query is declared; to find them in the compiled statement's
parameters, the query set is built once with a stand-in for each (an int or a str no caller sends), which
must reach the parameters unchanged: a field that converts its value on the way (a date on SQLite, say) is
refused when the statement is built rather than sent with a wrong value. A list's values are stand-ins of
their own, one per item: each length is a statement of its own.
"""

from __future__ import annotations

import dataclasses
import itertools
import threading
from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar

from django.db import DEFAULT_DB_ALIAS, connections, router
from django.db.models import Model, QuerySet
from django.db.models.query import ModelIterable, get_related_populators

from chatcore.prepared import prepared_cursor

M = TypeVar("M", bound=Model)

# Stand-ins for the values a call varies while its statement is built: values no caller sends.
_STAND_IN_INT = -(2**62)
_STAND_IN_STR = "\x1bcompiled-stand-in:"


@dataclasses.dataclass(frozen=True)
class _Statement:
    """One database's compiled statement and how its rows become instances."""

    sql: str
    # Each parameter: (name, index) of the call's value it takes (index None: the value itself), or None and
    # the constant the compiler put there.
    slots: tuple[tuple[str | None, int | None, Any], ...]
    columns: int
    converters: tuple[tuple[int, tuple[Callable, ...], Any], ...]
    # How a row becomes an instance (a query set of a model's rows; None for values_list()'s).
    model: type[Model] | None = None
    start: int = 0
    end: int = 0
    init_list: tuple[str, ...] = ()
    populators: tuple[Any, ...] = ()
    annotations: tuple[tuple[str, int], ...] = ()


class FixedQuery(Generic[M]):
    """A query set whose statement is built once per database (see the module's docstring).

    `build(using, **values)` returns the query set for database `using` and the call's `values` (keywords
    named in `kinds`, each `int`, `str` or `list` of one of them); it is called once per database and list
    length, with stand-ins. `fetch(**values)` sends the statement with the call's values and returns the
    instances. Queries with `select_for_update` are built and sent inside a transaction, as Django requires.
    """

    def __init__(self, model: type[M], build: Callable[..., QuerySet[M, Any]], **kinds: type) -> None:
        self.model, self._build, self._kinds = model, build, kinds
        self._for_write: bool | None = None
        self._statements: dict[tuple, _Statement] = {}
        self._lock = threading.Lock()

    def _alias(self) -> str:
        if self._for_write is None:  # as the query set would choose: the write database for a locking read
            queryset = self._build(router.db_for_read(self.model), **self._stand_ins({})[0])
            self._for_write = bool(queryset._for_write)  # type: ignore[attr-defined]  # the query set's own choice
        return router.db_for_write(self.model) if self._for_write else router.db_for_read(self.model)

    def _stand_ins(self, values: dict[str, Any]) -> tuple[dict[str, Any], dict[Any, tuple[str, int | None]]]:
        """Stand-in keywords for `build` (a list as long as the call's), and where each came from."""
        counter = itertools.count()
        stand_ins: dict[str, Any] = {}
        origin: dict[Any, tuple[str, int | None]] = {}

        def one(kind: type, name: str, index: int | None) -> Any:
            number = next(counter)
            value: Any = _STAND_IN_INT - number if kind is int else f"{_STAND_IN_STR}{number}"
            origin[value] = (name, index)
            return value

        for name, kind in self._kinds.items():
            if kind is list and name not in values:  # only the database is chosen with these: no statement
                stand_ins[name] = []
            elif isinstance(values.get(name), list | tuple):
                item = int if all(isinstance(v, int) for v in values[name]) else str
                stand_ins[name] = [one(item, name, index) for index in range(len(values[name]))]
            else:
                stand_ins[name] = one(kind if kind in (int, str) else int, name, None)
        return stand_ins, origin

    def _compile(self, alias: str, values: dict[str, Any]) -> _Statement:
        stand_ins, origin = self._stand_ins(values)
        queryset = self._build(alias, **stand_ins)
        compiler = queryset.query.get_compiler(using=alias)
        sql, params = compiler.as_sql()
        slots: list[tuple[str | None, int | None, Any]] = []
        placed = set()
        for param in params:
            found = origin.get(param) if isinstance(param, int | str) and not isinstance(param, bool) else None
            slots.append((found[0], found[1], None) if found else (None, None, param))
            placed.add(found)
        if unplaced := [name for name, index in origin.values() if (name, index) not in placed]:
            missing = ", ".join(sorted(set(unplaced)))
            raise ValueError(f"{self.model.__name__}: {missing} did not reach the statement's parameters unchanged")
        select, klass_info = compiler.select, compiler.klass_info
        fields = [column[0] for column in select[: compiler.col_count]]
        converters = tuple((pos, tuple(convs), expr) for pos, (convs, expr) in compiler.get_converters(fields).items())
        statement = _Statement(sql=sql, slots=tuple(slots), columns=compiler.col_count, converters=converters)
        if klass_info is None or queryset._iterable_class is not ModelIterable:
            return statement  # values_list(): the rows are what is returned
        select_fields = klass_info["select_fields"]
        start, end = select_fields[0], select_fields[-1] + 1
        return dataclasses.replace(
            statement,
            model=klass_info["model"],
            start=start,
            end=end,
            init_list=tuple(column[0].target.attname for column in select[start:end]),
            populators=tuple(get_related_populators(klass_info, select, alias)),  # type: ignore[call-arg]  # 5.2
            annotations=tuple(compiler.annotation_col_map.items()),
        )

    def fetch(self, **values: Any) -> list[M]:
        """The instances the query set built with `values` returns, in its order."""
        alias, connection, statement, rows = self._rows(values)
        assert statement.model is not None, "values_list() rows: use `rows`"
        return [self._instance(statement, alias, connection, row) for row in rows]

    def rows(self, **values: Any) -> list[tuple]:
        """The rows a values_list() query set built with `values` returns (converted as it converts them)."""
        _, connection, statement, rows = self._rows(values)
        assert statement.model is None, "instances' rows: use `fetch`"
        return [tuple(self._converted(statement, connection, row)) for row in rows]

    def _rows(self, values: dict[str, Any]) -> tuple[str, Any, _Statement, Sequence[Any]]:
        alias = self._alias()
        shape = (alias, *(len(values[name]) for name in self._kinds if isinstance(values[name], list | tuple)))
        statement = self._statements.get(shape)
        if statement is None:
            statement = self._compile(alias, values)
            with self._lock:
                self._statements[shape] = statement
        params = [
            constant if name is None else (values[name] if index is None else values[name][index])
            for name, index, constant in statement.slots
        ]
        connection = connections[alias]
        # Its text never changes: where the site prepares statements, PostgreSQL plans it once per connection.
        with prepared_cursor() if alias == DEFAULT_DB_ALIAS else connection.cursor() as cursor:
            cursor.execute(statement.sql, params)
            rows: Sequence[Any] = cursor.fetchall()
        return alias, connection, statement, rows

    @staticmethod
    def _converted(statement: _Statement, connection: Any, row: Sequence[Any]) -> Sequence[Any]:
        """The row's selected columns (not those only ordered by), through the database's and fields' converters."""
        if statement.converters or len(row) > statement.columns:
            row = list(row[: statement.columns])
            for pos, converters, expression in statement.converters:
                value = row[pos]
                for converter in converters:
                    value = converter(value, expression, connection)
                row[pos] = value
        return row

    @classmethod
    def _instance(cls, statement: _Statement, alias: str, connection: Any, row: Sequence[Any]) -> Any:
        row = cls._converted(statement, connection, row)
        assert statement.model is not None
        obj = statement.model.from_db(alias, statement.init_list, row[statement.start : statement.end])
        for populator in statement.populators:
            populator.populate(row, obj)
        for name, pos in statement.annotations:
            setattr(obj, name, row[pos])
        return obj
