"""Where the API server is and how to authenticate to it.

The official ``kubernetes`` client is used for one thing only: understanding
kubeconfig files and the in-cluster service-account setup (exec plugins, embedded
certificates, token files).  All requests then go through :mod:`kube.client`, which
parses raw JSON with orjson instead of building the client's model objects.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kustodian.kube.errors import KubeError


@dataclass(frozen=True)
class ClusterConfig:
    server: str
    ca_file: str | None = None
    verify: bool = True
    cert_file: str | None = None
    key_file: str | None = None
    # Returns the current "Bearer ..." header value; re-read per request so that
    # rotated service-account tokens are picked up.
    authorization: Callable[[], str | None] = field(default=lambda: None)


def _kubeconfig_exists() -> bool:
    paths = [p for p in os.environ.get("KUBECONFIG", "").split(os.pathsep) if p] or ["~/.kube/config"]
    return any(Path(p).expanduser().is_file() for p in paths)


def import_client() -> None:
    """Import the official client's config loader now (``load_config`` imports it on first use):
    1-4 s on a busy machine, which a caller timing only the API server (shell completion's
    deadline) must not count."""
    from kubernetes import client as k8s_client  # noqa: F401
    from kubernetes import config as k8s_config  # noqa: F401


def load_config(kubeconfig: str | None = None, api_endpoint: str | None = None,
                context: str | None = None) -> ClusterConfig:
    """Load from ``kubeconfig``, else ``$KUBECONFIG`` / ``~/.kube/config`` when such a file exists,
    else the in-cluster service account: kubectl's order (in a pod there is usually no kubeconfig,
    so a component there gets its service account as before).

    ``api_endpoint`` overrides the server URL (the ``--kube-api-endpoint`` flag).
    """
    from kubernetes import client as k8s_client
    from kubernetes import config as k8s_config

    cfg = k8s_client.Configuration()
    try:
        if kubeconfig:
            k8s_config.load_kube_config(  # type: ignore[no-untyped-call]
                config_file=kubeconfig, context=context, client_configuration=cfg)
        elif _kubeconfig_exists():
            k8s_config.load_kube_config(  # type: ignore[no-untyped-call]
                context=context, client_configuration=cfg)
        else:
            k8s_config.load_incluster_config(client_configuration=cfg)  # type: ignore[no-untyped-call]
    except (k8s_config.ConfigException, OSError, TypeError) as exc:
        if not api_endpoint:
            raise KubeError(f"cannot load a Kubernetes configuration: {exc}") from exc
        cfg = k8s_client.Configuration()

    def authorization() -> str | None:
        # the official client's token refresh (exec plugins, OIDC), None without one
        hook: Callable[[Any], object] | None = cfg.refresh_api_key_hook
        if hook is not None:
            hook(cfg)
        value = cfg.api_key.get("authorization") or cfg.api_key.get("BearerToken")
        if not value:
            return None
        prefix = cfg.api_key_prefix.get("authorization")
        text = str(value)
        if prefix and not text.startswith(prefix):
            text = f"{prefix} {text}"
        return text

    return ClusterConfig(
        server=(api_endpoint or cfg.host).rstrip("/"),
        ca_file=cfg.ssl_ca_cert,
        verify=bool(cfg.verify_ssl),
        cert_file=cfg.cert_file,
        key_file=cfg.key_file,
        authorization=authorization,
    )
