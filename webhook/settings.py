"""Settings of ``kustodian webhook`` (env ``KUSTODIAN_*``, flags override)."""

from __future__ import annotations

from pydantic import Field, model_validator

from kube.settings import KubeSettings


class WebhookSettings(KubeSettings):
    host: str = Field("0.0.0.0", description="Address to listen on")  # noqa: S104 - a pod serves all interfaces
    port: int = Field(8443, ge=1, le=65535, description="HTTPS port")
    tls_cert_file: str | None = Field(None, description="Serving certificate (PEM); reloaded when it changes")
    tls_key_file: str | None = Field(None, description="Serving key (PEM)")
    insecure_http: bool = Field(False, description="Serve plain HTTP (local experiments only; the API "
                                                   "server refuses non-TLS webhooks)")
    cert_reload_interval: float = Field(2.0, gt=0, le=300, description="Seconds between certificate checks")
    sync_timeout: float = Field(120.0, gt=0, description="Seconds to wait for caches before serving anyway "
                                                         "(not ready until they sync)")
    deletion_guard: bool = Field(True, description="Enable the deletion guard")
    deletion_rules_file: str | None = Field(None, description="YAML/JSON list of extra deletion rules")
    reclaim_space: bool = Field(True, description="Enable the reclaim-space policy webhook")
    reclaim_config_name: str = Field("kustodian-reclaim-config", description="Name of the central "
                                     "reclaim-space ConfigMap (in --namespace)")
    capacity: bool = Field(True, description="Validate AvailableCapacity / Reservation objects")
    graceful_timeout: int = Field(10, ge=0, le=300, description="Seconds to finish in-flight reviews on stop")

    @model_validator(mode="after")
    def _tls_is_consistent(self) -> WebhookSettings:
        if bool(self.tls_cert_file) != bool(self.tls_key_file):
            raise ValueError("tls_cert_file and tls_key_file must be given together")
        if not self.tls_cert_file and not self.insecure_http:
            raise ValueError("no TLS certificate: set tls_cert_file and tls_key_file "
                             "(see `kustodian certs issue`), or insecure_http for local experiments")
        if self.tls_cert_file and self.insecure_http:
            raise ValueError("insecure_http contradicts tls_cert_file: choose one")
        return self
