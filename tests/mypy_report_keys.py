"""A mypy plugin (pyproject.toml loads it): ``.get(key)`` on a TypedDict is held to its keys as ``[key]`` is. A
key the TypedDict does not declare is an error, and so is a key that is not a literal (a variable of type str,
a loop over names), which mypy cannot check.

mypy types ``.get`` of an undeclared key as ``object`` and says nothing (a TypedDict value may hold more keys
than its type declares), so a report key renamed in document.py but still read with ``.get`` somewhere would
pass the type check unseen. tests/test_types.py renames keys on purpose and expects every read to be an error."""

from __future__ import annotations

from collections.abc import Callable

from mypy import errorcodes
from mypy.plugin import MethodContext, Plugin
from mypy.plugins.default import typed_dict_get_callback
from mypy.typeops import try_getting_str_literals
from mypy.types import Type, TypedDictType, get_proper_type

GET = "typing.Mapping.get"  # TypedDict.get, as mypy names it for its method hooks


class ReportKeys(Plugin):
    def get_method_hook(self, fullname: str) -> Callable[[MethodContext], Type] | None:
        return _checked_get if fullname == GET else None


def _checked_get(ctx: MethodContext) -> Type:
    typed = get_proper_type(ctx.type)
    if isinstance(typed, TypedDictType) and ctx.args and ctx.args[0]:
        keys = try_getting_str_literals(ctx.args[0][0], ctx.arg_types[0][0])
        if keys is None:
            ctx.api.fail(
                "TypedDict .get() key must be a string literal, for the type checker to hold it to the keys",
                ctx.context,
                code=errorcodes.LITERAL_REQ,
            )
        for key in keys or ():
            if key not in typed.items:
                ctx.api.msg.typeddict_key_not_found(typed, key, ctx.context)
    return typed_dict_get_callback(ctx)  # then mypy's own typing of the value


def plugin(version: str) -> type[Plugin]:
    return ReportKeys
