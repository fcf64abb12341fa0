"""Errors raised by the ``certs`` package.

The tree, drawn once here (as httpx does in ``_exceptions.py``)::

    CertificateError                  anything this package refuses, with every reason
    ├── InvalidCertificateRequest     the caller asked for a certificate we will not issue
    │                                 (bad service name, bad IP, naive ``now``, ...): a
    │                                 configuration error, retrying will not help
    └── InvalidBundle                 PEM bytes or files on disk that cannot be used (missing,
                                      unparseable, key does not match certificate): the
                                      usual cure is to issue a fresh bundle

Each error carries ``problems``, one entry per defect, each prefixed with the field it is
about (``ips[1] "10.0.0.300": ...``), and the message joins them all, so a person fixes
everything in one round instead of discovering the defects one at a time.
"""

from __future__ import annotations

from collections.abc import Sequence

from kustodian.errors import EXIT_CONFIG, KustodianError


class CertificateError(KustodianError, ValueError):
    """A certificate could not be issued, parsed or loaded; ``problems`` lists every reason.

    A user-input error (exit 2) under :class:`kustodian.errors.KustodianError`; ``problems`` stays a
    tuple of strings, each already prefixed with its field."""

    exit_code = EXIT_CONFIG

    def __init__(self, what: str, problems: Sequence[str]) -> None:
        self.what = what
        self.problems: tuple[str, ...] = tuple(problems)
        super().__init__(f"{what}: {'; '.join(self.problems)}")


class InvalidCertificateRequest(CertificateError):
    """The inputs to ``issue_ca`` / ``issue_serving`` are invalid."""


class InvalidBundle(CertificateError):
    """PEM data or bundle files cannot be parsed or do not belong together."""
