"""Cluster access for the CLI, checked before the first request so a mistake is one line.

kubectl's order: ``--kubeconfig``, else ``$KUBECONFIG`` (a list of paths), else
``~/.kube/config``; in a pod, the service account when no kubeconfig is named.  ``--context``
picks a context of that kubeconfig.  A path that does not exist, a file that is not a
kubeconfig, or a context it does not hold is a ``ConfigError`` naming the flag (or the variable)
and the path, raised before anything is read.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

from kustodian.errors import ConfigError
from kustodian.kube.client import KubeClient
from kustodian.kube.config import ClusterConfig, load_config
from kustodian.kube.errors import KubeError
from kustodian.settings import KubeGroup

__all__ = ["connect", "connected_server", "context_namespace", "kubeconfig_source", "resolve_config"]

_IN_CLUSTER_TOKEN = Path("/var/run/secrets/kubernetes.io/serviceaccount/token")
_IN_CLUSTER_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


def _in_cluster() -> bool:
    return bool(os.environ.get("KUBERNETES_SERVICE_HOST")) and _IN_CLUSTER_TOKEN.is_file()


def kubeconfig_source(kube: KubeGroup) -> tuple[str, list[Path]]:
    """Which flag or variable names the kubeconfig, and its paths (empty: none named)."""
    if kube.kubeconfig:
        return "--kubeconfig", [Path(kube.kubeconfig).expanduser()]
    env = os.environ.get("KUBECONFIG", "")
    paths = [Path(p).expanduser() for p in env.split(os.pathsep) if p]
    if paths:
        return "KUBECONFIG", paths
    return "~/.kube/config", [Path("~/.kube/config").expanduser()]


def _kubeconfig(source: str, path: Path) -> Any:
    try:
        return yaml.safe_load(path.read_text())
    except OSError as exc:
        raise ConfigError.at(f"{source} {path}", f"{exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        line = f" (line {where.line + 1})" if where is not None else ""
        raise ConfigError.at(f"{source} {path}", f"not valid YAML{line}") from None


def _contexts(source: str, path: Path) -> list[str]:
    doc = _kubeconfig(source, path)
    if doc is None:
        return []
    if not isinstance(doc, dict) or not isinstance(doc.get("contexts", []), list | None):
        raise ConfigError.at(f"{source} {path}", "not a kubeconfig (expected a mapping with 'contexts')")
    return [str(c.get("name")) for c in doc.get("contexts") or [] if isinstance(c, dict)]


def resolve_config(kube: KubeGroup) -> ClusterConfig:
    """The ``ClusterConfig`` ``kube`` names, or a one-line ``ConfigError`` naming the flag."""
    source, paths = kubeconfig_source(kube)
    endpoint = kube.kube_api_endpoint
    context = kube.context
    named = kube.kubeconfig or source == "KUBECONFIG"
    existing = [p for p in paths if p.is_file()]
    if named and not existing:
        missing = os.pathsep.join(str(p) for p in paths)
        raise ConfigError.at(f"{source} {missing}", "no such file")
    if not existing and not _in_cluster():
        if context:
            raise ConfigError.at(f"--context {context}",
                                 "no kubeconfig to find it in (pass --kubeconfig PATH or set KUBECONFIG)")
        if not endpoint:
            raise ConfigError("no cluster to talk to: pass --kubeconfig PATH, set KUBECONFIG or "
                              "--kube-api-endpoint URL, or run in a pod (~/.kube/config does not exist)")
    if context:
        known = [name for p in existing for name in _contexts(source, p)]
        if context not in known:
            where = ", ".join(str(p) for p in existing)
            raise ConfigError.at(f"--context {context}", f"no such context in {where} "
                                 f"(contexts: {', '.join(known) or 'none'})")
    else:
        for p in existing:
            _contexts(source, p)  # a malformed file is named here rather than deep in the loader
    try:
        return load_config(os.pathsep.join(str(p) for p in existing) if kube.kubeconfig else None, endpoint,
                           context=context)
    except KubeError as exc:
        where = ", ".join(str(p) for p in existing) or "in-cluster configuration"
        why = str(exc).replace("cannot load a Kubernetes configuration: ", "")
        raise ConfigError.at(f"{source} {where}", why) from None


def context_namespace(kube: KubeGroup) -> str:
    """The namespace kubectl would use without ``-n``: the chosen context's (``--context``, else the
    current-context of the first file that names one), else the pod's own in a pod with no
    kubeconfig, else ``default``.  Like kubectl, the first file that defines a context wins."""
    source, paths = kubeconfig_source(kube)
    existing = [p for p in paths if p.is_file()]
    if not existing:
        if _in_cluster() and _IN_CLUSTER_NAMESPACE.is_file():
            return _IN_CLUSTER_NAMESPACE.read_text().strip() or "default"
        return "default"
    docs = [d for d in (_kubeconfig(source, p) for p in existing) if isinstance(d, dict)]
    chosen = kube.context or next((str(d["current-context"]) for d in docs if d.get("current-context")), "")
    for doc in docs:
        for entry in doc.get("contexts") or []:
            if isinstance(entry, dict) and entry.get("name") == chosen:
                context = entry.get("context")
                namespace = context.get("namespace") if isinstance(context, dict) else None
                return str(namespace or "default")
    return "default"


_SERVERS: list[str] = []  # this process's API servers, for the one-line "cannot read" error


def connect(kube: KubeGroup, *, timeout: float = 30.0) -> KubeClient:
    config = resolve_config(kube)
    _SERVERS.append(config.server)
    return KubeClient(config, timeout=timeout)


def connected_server() -> str:
    """The API server the last ``connect`` talked to ("" before any)."""
    return _SERVERS[-1] if _SERVERS else ""
