"""Flags generated from pydantic-settings models, so env and flags never drift apart.

Every settings field becomes ``--field-name`` with the field's description as help;
booleans get ``--x/--no-x``.  Only flags the user gave are passed to the model as
init arguments, which pydantic-settings ranks above ``KUSTODIAN_*`` variables:
flags override env, env overrides defaults.  A ``ValidationError`` is turned into a
one-line-per-problem message and exit code 2.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, TypeVar, get_args, get_origin

from pydantic import ValidationError
from pydantic_settings import BaseSettings

S = TypeVar("S", bound=BaseSettings)


def add_settings_flags(parser: argparse.ArgumentParser, model: type[BaseSettings]) -> None:
    group = parser.add_argument_group("settings (flag > KUSTODIAN_<NAME> env > default)")
    for name, info in model.model_fields.items():
        flag = "--" + name.replace("_", "-")
        default = info.default
        help_text = (info.description or "") + (f" (default: {default})" if default not in (None, "") else "")
        annotation = info.annotation
        if annotation is bool:
            group.add_argument(flag, dest=name, action=argparse.BooleanOptionalAction, default=None,
                               help=help_text)
        elif get_origin(annotation) is list or list in get_args(annotation):
            group.add_argument(flag, dest=name, default=None, help=help_text + " (comma-separated)",
                               type=lambda v: [x.strip() for x in v.split(",") if x.strip()])
        else:
            group.add_argument(flag, dest=name, default=None, help=help_text, metavar=name.upper())


def settings_from_args(model: type[S], args: argparse.Namespace) -> S:
    given: dict[str, Any] = {
        name: getattr(args, name) for name in model.model_fields if getattr(args, name, None) is not None
    }
    try:
        return model(**given)
    except ValidationError as exc:
        lines = []
        for err in exc.errors():
            loc = ".".join(str(p) for p in err["loc"]) or "settings"
            flag = "--" + loc.replace("_", "-") if err["loc"] else ""
            where = f"{flag} / KUSTODIAN_{loc.upper()}" if flag else loc
            lines.append(f"  {where}: {err['msg']}")
        sys.stderr.write("kustodian: invalid settings, refusing to start:\n" + "\n".join(lines) + "\n")
        raise SystemExit(2) from None
