"""The webhook's certificates: issue a CA and a serving certificate, decide when to renew them.

Split by purity: ``certs.renewal`` only decides (``(certificate, now) -> answer``, no I/O, no
clock) and ``certs.issue`` makes keys and certificates and writes them to disk.  Publishing
the ``caBundle`` into webhook configurations is the caller's act, through ``kube``.
Errors are drawn in ``certs.errors``.
"""

from kustodian.certs.errors import CertificateError, InvalidBundle, InvalidCertificateRequest
from kustodian.certs.inject import inject_ca_bundle
from kustodian.certs.issue import KeyPair, issue_ca, issue_serving, load_bundle, write_bundle
from kustodian.certs.manager import CertManager
from kustodian.certs.renewal import merge_ca_bundle, needs_renewal, renewal_time

__all__ = [
    "CertManager",
    "CertificateError",
    "InvalidBundle",
    "InvalidCertificateRequest",
    "KeyPair",
    "inject_ca_bundle",
    "issue_ca",
    "issue_serving",
    "load_bundle",
    "merge_ca_bundle",
    "needs_renewal",
    "renewal_time",
    "write_bundle",
]
