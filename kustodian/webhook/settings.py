"""Settings of ``kustodian webhook`` (env ``KUSTODIAN_*``, flags override)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from kustodian.kube.settings import KubeSettings


class WebhookSettings(KubeSettings):
    host: str = Field("0.0.0.0", description="Address to listen on")  # noqa: S104 - a pod serves all interfaces
    port: int = Field(8443, ge=1, le=65535, description="HTTPS port")
    tls_mode: Literal["files", "builtin"] = Field(
        "files", description="files: serve --tls-cert-file/--tls-key-file (cert-manager, your own "
                             "Secret); builtin: issue, store (Secret), publish (caBundle) and renew "
                             "certificates itself")
    tls_dir: str = Field("/tmp/kustodian-tls",  # noqa: S108 - an emptyDir in the pod
                         description="builtin mode: where the serving pair is written")
    tls_secret_name: str = Field("kustodian-tls",
                                 description="builtin mode: Secret holding CA and serving pair")
    service_name: str = Field("kustodian", description="builtin mode: the webhook Service (certificate SANs)")
    webhook_configuration_name: str = Field("kustodian", description="builtin mode: Validating and Mutating "
                                            "WebhookConfiguration whose caBundle is kept current")
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
    reclaim_csi_addons_config: str = Field(
        "csi-addons-system/csi-addons-config", pattern=r"^[a-z0-9-]+/[a-z0-9.-]+$",
        description="namespace/name of csi-addons' own ConfigMap (schedule-precedence is read from it)")
    reclaim_csi_addons_users: list[str] = Field(
        default_factory=lambda: ["system:serviceaccount:csi-addons-system:csi-addons-controller-manager"],
        description="Users whose schedule writes are never refused (csi-addons' controller)")
    reclaim_keyrotation: bool = Field(
        False, description="Inject keyrotation.csiaddons.openshift.io schedules by the same rules")
    capacity: bool = Field(True, description="Validate AvailableCapacity / Reservation objects")
    graceful_timeout: int = Field(10, ge=0, le=300, description="Seconds to finish in-flight reviews on stop")

    @model_validator(mode="after")
    def _tls_is_consistent(self) -> WebhookSettings:
        if self.tls_mode == "builtin":
            if self.tls_cert_file or self.tls_key_file or self.insecure_http:
                raise ValueError("tls_mode builtin manages the certificate itself: do not also set "
                                 "tls_cert_file, tls_key_file or insecure_http")
            self.tls_cert_file = f"{self.tls_dir}/tls.crt"
            self.tls_key_file = f"{self.tls_dir}/tls.key"
            return self
        if bool(self.tls_cert_file) != bool(self.tls_key_file):
            raise ValueError("tls_cert_file and tls_key_file must be given together")
        if not self.tls_cert_file and not self.insecure_http:
            raise ValueError("no TLS certificate: set tls_cert_file and tls_key_file "
                             "(see `kustodian certs issue`), or insecure_http for local experiments")
        if self.tls_cert_file and self.insecure_http:
            raise ValueError("insecure_http contradicts tls_cert_file: choose one")
        return self
