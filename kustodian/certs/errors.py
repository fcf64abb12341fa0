"""Errors raised by the ``certs`` package.

This package's branch of the one tree drawn in :mod:`kustodian.errors` (there, the
drawing a test checks; ``CertificateError`` is a ``ConfigError``)::

    CertificateError                  anything this package refuses, with every reason
    ├── InvalidCertificateRequest     the caller asked for a certificate we will not issue
    │                                 (bad service name, bad IP, naive ``now``, ...): a
    │                                 configuration error, retrying will not help
    └── InvalidBundle                 PEM bytes or files on disk that cannot be used (missing,
                                      unparseable, key does not match certificate): the
                                      usual cure is to issue a fresh bundle

Each error carries ``problems``, one ``FieldProblem`` per defect, with the field it is
about (``ips[1] "10.0.0.300": ...``), and the message joins them all, so a person fixes
everything in one round instead of discovering the defects one at a time.
"""

from __future__ import annotations

from collections.abc import Sequence

from kustodian.errors import ConfigError, FieldProblem


class CertificateError(ConfigError):
    """A certificate could not be issued, parsed or loaded; ``problems`` lists every reason.

    A user-input error (exit 2), a :class:`kustodian.errors.ConfigError`: each problem is a
    ``FieldProblem`` whose path is the field it is about (``ips[1] "10.0.0.300"``); one line,
    ``what: problem; problem``."""

    inline = True

    def __init__(self, what: str, problems: Sequence[str | FieldProblem]) -> None:
        super().__init__(what, [p if isinstance(p, FieldProblem) else FieldProblem.parse(p)
                                for p in problems])


class InvalidCertificateRequest(CertificateError):
    """The inputs to ``issue_ca`` / ``issue_serving`` are invalid."""


class InvalidBundle(CertificateError):
    """PEM data or bundle files cannot be parsed or do not belong together."""
