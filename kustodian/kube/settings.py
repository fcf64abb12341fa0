"""Settings every component shares: where the cluster is, how to log, our namespace.

Components extend ``KubeSettings`` with their own fields.  Values come from
``KUSTODIAN_*`` environment variables and are overridden by command-line flags
(the CLI passes flags as init arguments, which pydantic-settings ranks first).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated, Literal

from pydantic import BeforeValidator, Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class KubeSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="KUSTODIAN_", extra="forbid", validate_default=True)

    kubeconfig: str | None = Field(None, description="Path to a kubeconfig; in-cluster config when unset")
    kube_api_endpoint: str | None = Field(None, description="API server URL, overriding the kubeconfig's")
    namespace: str = Field("kustodian", description="Namespace Kustodian runs in (leases, orphans, config)",
                           pattern=r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
    log_format: Literal["auto", "json", "text"] = Field(
        "auto", description="json in-cluster, text on a terminal (auto decides by whether stderr is a TTY)")
    log_level: Literal["debug", "info", "warning", "error"] = Field("info", description="Log level")


def _go_duration(value: object) -> object:
    """``"60s"``, ``"1m30s"``, ``"10m"`` (Go syntax, as upstream flags take) or plain seconds."""
    from kustodian.policy.reclaim.duration import DurationError, parse_go_duration

    if isinstance(value, timedelta):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return timedelta(seconds=value)
    if isinstance(value, str):
        text = value.strip()
        try:
            return timedelta(seconds=float(text))
        except ValueError:
            pass
        try:
            return parse_go_duration(text)
        except DurationError as exc:
            raise ValueError(f"{value!r} is not a duration like 60s, 1m30s or 10m: {exc}") from exc
    raise ValueError(f"{value!r} is not a duration")


GoDuration = Annotated[timedelta, BeforeValidator(_go_duration)]
