"""Python hygiene of the mpilens package: every public name is documented, and every error mpilens
raises for its users derives from one base class."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import types

import mpilens
from conftest import ROOT
from mpilens.errors import MpilensError

PACKAGE = ROOT / "python" / "mpilens"


def _modules() -> list[types.ModuleType]:
    out = [mpilens]
    for info in pkgutil.walk_packages(mpilens.__path__, "mpilens."):
        if info.name == "mpilens.__main__":  # runs the command line when imported
            continue
        out.append(importlib.import_module(info.name))
    return out


def _undocumented(mod: types.ModuleType) -> list[str]:
    """Public module-level functions and classes defined in `mod`, and public methods and
    properties of its classes, without a docstring. A method overriding a documented one inherits
    its docstring (inspect.getdoc); a class must have its own."""
    missing = [] if (mod.__doc__ or "").strip() else [f"{mod.__name__} (module)"]
    for name, obj in vars(mod).items():
        if name.startswith("_") or getattr(obj, "__module__", None) != mod.__name__:
            continue
        if inspect.isfunction(obj) and not inspect.getdoc(obj):
            missing.append(f"{mod.__name__}.{name}")
        elif inspect.isclass(obj):
            if not (obj.__dict__.get("__doc__") or "").strip() or obj.__doc__.startswith(f"{obj.__name__}("):
                missing.append(f"{mod.__name__}.{name}")  # (dataclasses make up a signature as a docstring)
            for attr, member in vars(obj).items():
                if attr.startswith("_"):
                    continue
                if isinstance(member, (staticmethod, classmethod)):
                    member = member.__func__
                if inspect.isfunction(member):
                    documented = inspect.getdoc(getattr(obj, attr))
                elif isinstance(member, property):
                    documented = inspect.getdoc(member)
                elif hasattr(member, "func") and hasattr(member, "attrname"):  # functools.cached_property
                    documented = member.__doc__
                else:
                    continue
                if not (documented or "").strip():
                    missing.append(f"{mod.__name__}.{name}.{attr}")
    return missing


def test_every_public_name_has_a_docstring():
    missing = [m for mod in _modules() for m in _undocumented(mod)]
    assert not missing, f"{len(missing)} public names without a docstring: {missing}"


def test_every_error_class_derives_from_the_base():
    """Every class named *Error in the package's source is a MpilensError."""
    named = []
    for f in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(f.read_text())
        named += [(f, node.name) for node in ast.walk(tree) if isinstance(node, ast.ClassDef)
                  and node.name.endswith("Error")]
    assert named
    wrong = []
    for f, name in named:
        module = "mpilens." + ".".join(f.relative_to(PACKAGE).with_suffix("").parts)
        cls = getattr(importlib.import_module(module), name)
        if not issubclass(cls, MpilensError):
            wrong.append(f"{module}.{name}")
    assert not wrong, f"error classes outside MpilensError: {wrong}"
    assert "base" in (MpilensError.__doc__ or "").lower()
