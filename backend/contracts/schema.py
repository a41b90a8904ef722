"""The contracts as JSON Schema (draft 2020-12), and a small validator of JSON values against it.

``json_schema`` turns the TypedDicts of ``backend.contracts`` into one schema document: every
TypedDict becomes a closed object under ``$defs`` (its docstring's summary and each field's line
as descriptions), ``X | None`` an ``anyOf``, ``list[X]`` an array, ``tuple[X, Y]`` a fixed-length
array, ``dict[str, X]`` an object of any keys, ``Literal`` an ``enum``. A key spelled with
``<name>`` (``accuracy[<config>]``) stands for a family of keys and becomes a ``patternProperties``
entry. ``violations`` checks a parsed JSON value against such a schema (the subset written here)
and says where it differs: it is how tests hold real ``--json`` output to its contract.
"""

import ast
import inspect
import json
import re
import sys
import types
from functools import cache
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints, is_typeddict

DRAFT = "https://json-schema.org/draft/2020-12/schema"
_FIELD_LINE = re.compile(r"^\s*([^\s:][^:]*<[^<>:]+>[^:]*|\S+): (\S.*)$")  # a family key may hold spaces
_FAMILY = re.compile(r"<[^<>]+>")


def summary(cls: type) -> str:
    """The docstring's first paragraph, on one line."""
    return " ".join(inspect.cleandoc(cls.__doc__ or "").split("\n\n")[0].split())


def own_field_docs(cls: type) -> dict[str, str]:
    """``field: description`` lines of the docstring after its first paragraph."""
    text = inspect.cleandoc(cls.__doc__ or "")
    rest = text.split("\n\n", 1)[1] if "\n\n" in text else ""
    return {m[1]: m[2] for m in map(_FIELD_LINE.match, rest.splitlines()) if m}


@cache
def declared_bases(module: str) -> dict[str, list[str]]:
    """Base class names per class of a module, read from its source (TypedDict forgets its bases)."""
    tree = ast.parse(inspect.getsource(sys.modules[module]))
    return {
        node.name: [b.id for b in node.bases if isinstance(b, ast.Name)]
        for node in tree.body
        if isinstance(node, ast.ClassDef)
    }


def bases(cls: type) -> list[type]:
    """The TypedDicts ``cls`` extends, as written in its class statement."""
    module = sys.modules[cls.__module__]
    found = [getattr(module, name, None) for name in declared_bases(cls.__module__).get(cls.__name__, [])]
    return [b for b in found if b is not None and is_typeddict(b)]


def field_docs(cls: type) -> dict[str, str]:
    """Each field's description: from the class's docstring, else from the class it extends."""
    docs: dict[str, str] = {}
    for base in reversed(bases(cls)):
        docs |= field_docs(base)
    return docs | own_field_docs(cls)


def is_family(key: str) -> bool:
    """``accuracy[<config>]``: a key standing for one key per config."""
    return bool(_FAMILY.search(key))


def family_pattern(key: str) -> str:
    """The regular expression of a family key: each ``<name>`` is any non-empty text."""
    return "^" + ".+".join(re.escape(part) for part in _FAMILY.split(key)) + "$"


_SCALARS = {str: "string", int: "integer", float: "number", bool: "boolean", type(None): "null"}


class _Converter:
    def __init__(self, named: dict[str, Any]) -> None:
        self.defs: dict[str, dict] = {}
        self.named = named  # type aliases written once under $defs (Interval)

    def of(self, tp: Any) -> dict:
        if tp is Any:
            return {}
        for name, alias in self.named.items():
            if tp == alias:
                if name not in self.defs:
                    self.defs[name] = self._generic(alias) | {"description": _alias_doc(name)}
                return {"$ref": f"#/$defs/{name}"}
        if tp in _SCALARS:
            return {"type": _SCALARS[tp]}
        if is_typeddict(tp):
            self.define(tp)
            return {"$ref": f"#/$defs/{tp.__name__}"}
        origin, args = get_origin(tp), get_args(tp)
        if origin in (Union, types.UnionType):
            parts = [self.of(a) for a in args]
            if all(set(p) == {"type"} for p in parts):
                return {"type": [p["type"] for p in parts]}
            return {"anyOf": parts}
        return self._generic(tp)

    def _generic(self, tp: Any) -> dict:
        origin, args = get_origin(tp), get_args(tp)
        if origin is Literal:
            return {"enum": list(args)}
        if origin is list:
            return {"type": "array", "items": self.of(args[0])}
        if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
            return {"type": "array", "items": self.of(args[0])}
        if origin is tuple:
            n = len(args)
            return {"type": "array", "prefixItems": [self.of(a) for a in args], "minItems": n, "maxItems": n}
        if origin is dict:
            return {"type": "object", "additionalProperties": self.of(args[1])}
        raise TypeError(f"no JSON schema for {tp!r}")

    def define(self, cls: type) -> None:
        name = cls.__name__
        if name in self.defs:
            if self.defs[name].get("x-module") != cls.__module__:
                raise TypeError(f"two contracts named {name}")
            return
        self.defs[name] = {"x-module": cls.__module__}  # placeholder: recursion stops here
        hints, docs = get_type_hints(cls), field_docs(cls)
        props: dict[str, Any] = {}
        patterns: dict[str, Any] = {}
        for key, tp in hints.items():
            (patterns if is_family(key) else props)[family_pattern(key) if is_family(key) else key] = self.of(tp) | {
                "description": docs.get(key, "")
            }
        schema: dict[str, Any] = {"type": "object", "description": summary(cls), "properties": props}
        if patterns:
            schema["patternProperties"] = patterns
        required = cls.__required_keys__  # type: ignore[attr-defined]  # a TypedDict class's; typing names no type for one
        schema["required"] = [k for k in hints if k in required and not is_family(k)]
        schema["additionalProperties"] = False
        self.defs[name] = {"x-module": cls.__module__} | schema


def _alias_doc(name: str) -> str:
    """A named alias's description: the string literal under its assignment in a ``backend.contracts`` module."""
    for module in [m for m in list(sys.modules) if m.startswith("backend.contracts.")]:
        body = ast.parse(inspect.getsource(sys.modules[module])).body
        for node, after in zip(body, body[1:], strict=False):
            if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == name for t in node.targets):
                if isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant):
                    return " ".join(str(after.value.value).split())
    return ""


def json_schema(reports: dict[str, Any], title: str = "", named: dict[str, Any] | None = None) -> dict:
    """One schema document: ``reports`` (name -> type) under ``properties``, every TypedDict and each
    ``named`` alias (name -> type, described by the string under its assignment) under ``$defs``."""
    conv = _Converter(named or {})
    props = {name: conv.of(tp) for name, tp in reports.items()}
    defs = {name: {k: v for k, v in d.items() if k != "x-module"} for name, d in sorted(conv.defs.items())}
    return {"$schema": DRAFT, "title": title, "type": "object", "properties": props, "$defs": defs}


def dumps(schema: dict) -> str:
    """The schema as text with one line per field (a contract's change is a one-line diff).

    The document, ``properties``, ``$defs``, each definition and its ``properties`` are spread over
    lines; everything below (a field's schema) is written on one line.
    """

    def spread(value: Any, path: tuple[str, ...]) -> bool:
        depth = len(path)
        return isinstance(value, dict) and (
            depth <= 1
            or (depth == 2 and path[0] == "$defs")
            or (depth == 3 and path[0] == "$defs" and path[2] in ("properties", "patternProperties"))
        )

    def write(value: Any, path: tuple[str, ...], indent: int) -> str:
        if not spread(value, path):
            return json.dumps(value, ensure_ascii=False)
        pad = "  " * (indent + 1)
        body = ",\n".join(f"{pad}{json.dumps(k)}: {write(v, (*path, k), indent + 1)}" for k, v in value.items())
        return "{\n" + body + "\n" + "  " * indent + "}" if value else "{}"

    return write(schema, (), 0) + "\n"


def _is_type(value: Any, name: str) -> bool:
    if name == "integer":  # JSON Schema: a number with a zero fractional part is an integer
        return (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, float) and value.is_integer()
        )
    if name == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, {"string": str, "boolean": bool, "null": type(None), "object": dict, "array": list}[name])


def violations(value: Any, schema: dict, root: dict | None = None, path: str = "$") -> list[str]:
    """Where ``value`` (parsed JSON) breaks ``schema`` (as ``json_schema`` writes it): ``path: what``."""
    root = schema if root is None else root
    if "$ref" in schema:
        return violations(value, root["$defs"][schema["$ref"].rsplit("/", 1)[1]], root, path)
    if "anyOf" in schema:
        tries = [violations(value, s, root, path) for s in schema["anyOf"]]
        return [] if any(not t for t in tries) else min(tries, key=len)
    if "enum" in schema:
        return [] if value in schema["enum"] else [f"{path}: {value!r} is not one of {schema['enum']}"]
    kinds = schema.get("type")
    if kinds is not None:
        kinds = [kinds] if isinstance(kinds, str) else kinds
        if not any(_is_type(value, k) for k in kinds):
            return [f"{path}: {type(value).__name__} where {' or '.join(kinds)} is expected"]
    out: list[str] = []
    if isinstance(value, dict):
        props, patterns = schema.get("properties", {}), schema.get("patternProperties", {})
        out += [f"{path}: missing key {k!r}" for k in schema.get("required", []) if k not in value]
        for key, item in value.items():
            where = f"{path}.{key}"
            if key in props:
                out += violations(item, props[key], root, where)
                continue
            matched = [s for p, s in patterns.items() if re.search(p, key)]
            extra = schema.get("additionalProperties", True)
            if matched:
                out += violations(item, matched[0], root, where)
            elif extra is False:
                out.append(f"{path}: unexpected key {key!r}")
            elif isinstance(extra, dict):
                out += violations(item, extra, root, where)
    if isinstance(value, list):
        if "minItems" in schema and not schema["minItems"] <= len(value) <= schema["maxItems"]:
            out.append(f"{path}: {len(value)} items where {schema['minItems']} are expected")
        fixed = schema.get("prefixItems", [])
        for k, item in enumerate(value):
            sub = fixed[k] if k < len(fixed) else schema.get("items")
            if sub is not None:
                out += violations(item, sub, root, f"{path}[{k}]")
    return out
