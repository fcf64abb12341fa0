"""Whether Kustodian's deletion guard is installed in the cluster a tool reads.

``report`` and ``explain-delete`` answer with the guard's own decision; on a cluster where no
webhook configuration sends DELETEs to the guard, that decision is what it *would* do, and
nothing is refused: the tools say so in one line rather than let "blocked" or "no DELETE
refused" read as the cluster's state.
"""

from __future__ import annotations

import argparse

from kustodian.cli.cluster import connect
from kustodian.kube.errors import Forbidden, KubeError
from kustodian.kube.resources import VALIDATING_WEBHOOKS
from kustodian.settings import ToolSettings, settings_from_args

__all__ = ["GUARD_WEBHOOK", "guard_installed"]

GUARD_WEBHOOK = "deletion-guard.kustodian.io"  # the chart's name for the deletion guard's webhook


REPORT_TAIL = "the protections listed are what it would enforce"


def guard_installed(args: argparse.Namespace, listed: str = REPORT_TAIL) -> tuple[str, bool | None]:
    """Whether a ValidatingWebhookConfiguration sends DELETEs to Kustodian's deletion guard (None:
    cannot tell), and one line to print when it does not: Kustodian is not installed, or its guard
    is off, so nothing is refused whatever the report says would be protected."""
    client = connect(settings_from_args(ToolSettings, args).kube)
    try:
        configs, _ = client.list(VALIDATING_WEBHOOKS)
    except Forbidden:
        return ("note: cannot tell whether Kustodian's deletion guard is installed: listing "
                "validatingwebhookconfigurations is forbidden for this user"), None
    except KubeError as exc:
        return f"note: cannot tell whether Kustodian's deletion guard is installed: {exc}", None
    finally:
        client.close()
    if any(isinstance(hook, dict) and hook.get("name") == GUARD_WEBHOOK
           for config in configs for hook in config.get("webhooks") or []):
        return "", True
    return (f"note: Kustodian's deletion guard is not installed in this cluster (no "
            f"ValidatingWebhookConfiguration has the {GUARD_WEBHOOK} webhook), so no DELETE is refused "
            f"({listed})"), False
