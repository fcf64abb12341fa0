"""Settings every component shares: where the cluster is, how to log, our namespace.

Components extend ``KubeSettings`` with their own fields.  Values come from
``KUSTODIAN_*`` environment variables and are overridden by command-line flags
(the CLI passes flags as init arguments, which pydantic-settings ranks first).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field
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
