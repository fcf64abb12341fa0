"""Groups of ``kustodian webhook``: the HTTPS server, its certificate, the deletion guard."""

from __future__ import annotations

from datetime import timedelta
from typing import Literal

from pydantic import Field, field_validator

from kustodian.policy.failure_policy import FailurePolicyError, parse_policies
from kustodian.settings.common import Group
from kustodian.settings.types import NonNegativeDuration, PositiveDuration

__all__ = ["DeletionGuardGroup", "PolicyReportsGroup", "TlsGroup", "WebhookGroup"]


class WebhookGroup(Group):
    host: str = Field("0.0.0.0", description="Address to listen on")  # noqa: S104 - a pod serves all interfaces
    port: int = Field(8443, ge=1, le=65535, description="HTTPS port")
    insecure_http: bool = Field(False, description="Serve plain HTTP (local experiments only; the API "
                                                   "server refuses non-TLS webhooks)")
    cert_reload_interval: PositiveDuration = Field(timedelta(seconds=2),
                                                   description="Interval of certificate checks (at most 5m)")
    sync_timeout: PositiveDuration = Field(timedelta(seconds=120), description="How long to wait for caches "
                                           "before serving anyway (not ready until they sync)")
    graceful_timeout: NonNegativeDuration = Field(timedelta(seconds=10), description="Time to finish "
                                                  "in-flight reviews on stop (at most 5m)")
    # what one connection may cost (hostile input): controller-runtime caps bodies at 7 MiB
    max_request_bytes: int = Field(7 * 1024 * 1024, ge=64 * 1024, le=256 * 1024 * 1024,
                                   description="Largest admission request body; a larger one is answered "
                                               "413 before it is read (controller-runtime: 7 MiB)")
    header_timeout: PositiveDuration = Field(timedelta(seconds=10), description="Time a connection may "
                                             "take to send a request's line and headers")
    body_timeout: PositiveDuration = Field(timedelta(seconds=30),
                                           description="Time a request may take to send its body")
    idle_timeout: PositiveDuration = Field(timedelta(seconds=60),
                                           description="Time a kept-alive connection may idle")
    handshake_timeout: PositiveDuration = Field(timedelta(seconds=10),
                                                description="Time a TLS handshake may take")
    # issue 32: a connection to the API server that dies without FIN/RST must not look alive
    api_probe_interval: PositiveDuration = Field(
        timedelta(seconds=2), description="Interval of the round trips (GET /version) that prove the API "
                                          "server answers; each may take as long")
    api_silence_limit: PositiveDuration = Field(
        timedelta(seconds=6), description="After this long without an answered round trip every cache "
                                          "is stale (deletes 503, /readyz failing), its watch restarted")

    # docs/design.md, "Failure policies": the chart installs every webhook Ignore; a serving replica
    # of this very configuration arms the intended policies
    configuration_name: str = Field(
        "", description="Validating and Mutating WebhookConfiguration whose intended failure policies "
                        "(annotation kustodian.io/failure-policies) this replica arms once it serves, and "
                        "disarms when armed for another configuration; empty: none")
    configuration_checksum: str = Field(
        "", description="The configuration this replica runs (the chart's kustodian.io/configuration-"
                        "checksum): it arms only a configuration that carries the same")
    failure_policies: str = Field(
        "", description="name=Fail|Ignore,... : the intended failure policies this replica runs with; it "
                        "arms only a configuration whose kustodian.io/failure-policies is the same text")

    @field_validator("failure_policies")
    @classmethod
    def _policies_parse(cls, value: str) -> str:
        try:
            parse_policies(value)
        except FailurePolicyError as exc:
            raise ValueError(str(exc)) from None
        return value

    @field_validator("cert_reload_interval", "graceful_timeout", "header_timeout", "body_timeout",
                     "handshake_timeout")
    @classmethod
    def _at_most_five_minutes(cls, value: timedelta) -> timedelta:
        if value > timedelta(minutes=5):
            raise ValueError("must be at most 5m")
        return value


class TlsGroup(Group):
    """The serving certificate: files (cert-manager, your own Secret) or built in."""

    mode: Literal["files", "builtin"] = Field(
        "files", description="files: serve --tls-cert-file/--tls-key-file (cert-manager, your own "
                             "Secret); builtin: issue, store (Secret), publish (caBundle) and renew "
                             "certificates itself")
    dir: str = Field("/tmp/kustodian-tls",  # noqa: S108 - an emptyDir in the pod
                     description="builtin mode: where the serving pair is written")
    secret_name: str = Field("kustodian-tls", description="builtin mode: Secret holding CA and serving pair")
    service_name: str = Field("kustodian", description="builtin mode: the webhook Service (certificate SANs)")
    webhook_configuration_name: str = Field("kustodian", description="builtin mode: Validating and Mutating "
                                            "WebhookConfiguration whose caBundle is kept current")
    cert_file: str | None = Field(None, description="Serving certificate (PEM); reloaded when it changes")
    key_file: str | None = Field(None, description="Serving key (PEM)")
    server_name: str | None = Field(
        None, description="files mode: a DNS name the serving certificate must carry to be used and "
                          "ready (builtin mode: always <service>.<namespace>.svc)")


class DeletionGuardGroup(Group):
    enabled: bool = Field(True, description="Refuse deletes of storage that is still in use")
    rules_file: str | None = Field(None, description="YAML/JSON list of extra deletion rules")
    mode: Literal["enforce", "warn", "audit"] = Field(
        "enforce", description="enforce: refuse; warn: allow with a warning kubectl prints; audit: allow "
                               "silently. Every refusal is counted (kustodian_admission_policy_outcomes)")
    # per-provider dependents metric (issue 20): bounded cardinality, computed off the admission path
    metrics_max_series: int = Field(
        500, ge=1, le=100_000, description="Most series of kustodian_protected_provider_dependents; "
                                           "the providers with the fewest dependents beyond it are summed "
                                           "into one kind=\"_folded\" series")
    metrics_interval: PositiveDuration = Field(
        timedelta(seconds=30), description="How often the per-provider dependents metric is recomputed")
    # issue 32: an allow is sent only after a round trip that started after the request arrived
    allow_proof_timeout: PositiveDuration = Field(
        timedelta(seconds=1), description="How long an allowed delete may wait for a round trip to the API "
                                          "server that proves its caches' connection alive; without one "
                                          "the answer is 503; also how long a delete waits for a watch "
                                          "being renewed before the 503 (keep well below the webhook's "
                                          "timeoutSeconds)")
    # issue 44: the record the chart's ValidatingAdmissionPolicy reads (the deletion backstop)
    backstop_record: str = Field(
        "", max_length=200, pattern=r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?)?$",
        description="Name of the deletion backstop's record: BackstopRecords <name>-0..7 and the Lease "
                    "<name> in --namespace, kept current for the chart's ValidatingAdmissionPolicy, which "
                    "refuses the DELETE of what it holds while no replica answers; empty: no record is kept")
    backstop_debounce: PositiveDuration = Field(
        timedelta(milliseconds=50), description="How long the backstop's writer waits after a change for the "
                                                "rest of a burst before it recomputes the record")
    backstop_confirm_interval: PositiveDuration = Field(
        timedelta(seconds=60), description="How often the backstop's record is confirmed from fresh caches "
                                           "(its age stays below this while it is kept), and read back by "
                                           "every replica for kustodian_deletion_backstop_record_age_seconds")


class PolicyReportsGroup(Group):
    """Findings written as policy reports (OpenReports, else wgpolicyk8s), one per namespace."""

    enabled: bool = Field(True, description="Write what the deletion guard and the schedule validator let "
                                            "through (or would refuse) as policy reports, where a report "
                                            "API is served")
    name: str = Field("kustodian", pattern=r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$",
                      description="Name of every report written (one per namespace, one cluster-scoped)")
    interval: PositiveDuration = Field(timedelta(seconds=30),
                                       description="How often the reports are brought in line with the "
                                                   "cluster (and ~1s after a delete is let through)")
    max_results: int = Field(1000, ge=1, le=5000,
                             description="Most results in one report; the rest are left off (the most "
                                         "severe, with the most dependents, kept) and counted in its "
                                         "summary and its kustodian.io/omitted-results annotation")
