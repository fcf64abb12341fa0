# syntax=docker/dockerfile:1
# One image for every component: `kustodian webhook`, `kustodian controllers`,
# `kustodian node-agent`, `kustodian certs ...`.
#
#   docker build -t kustodian .                        # python:3.11-slim, wheels from the index
#   podman build --build-arg BASE=localhost/kustodian-base:bookworm ...   # what CI does:
#       see kustodian/testing/image.py (a Debian rootfs as base, wheels built on the host and
#       bind-mounted, PIP_NO_INDEX=1 PIP_FIND_LINKS=/wheels as build args: no network in the build)
#
# The base needs `python3` with its `venv` module (Debian: python3-venv). Nothing but the
# virtualenv at /opt/kustodian reaches the final stage: no pip, no compiler, no sources,
# and neither bench/ nor tests/ nor kustodian/testing (.dockerignore keeps them out of the
# context altogether).

ARG BASE=python:3.11-slim

FROM ${BASE} AS builder
# PIP_NO_INDEX / PIP_FIND_LINKS: empty for a normal build; set to install from a local wheel
# directory (an offline build). pip reads them from the environment.
ARG PIP_NO_INDEX=
ARG PIP_FIND_LINKS=
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONDONTWRITEBYTECODE=1
WORKDIR /src
COPY pyproject.toml README.md ./
COPY kustodian ./kustodian
# kubernetes ships an asyncio copy of its whole client (half the package) that Kustodian never
# imports (it reads kubeconfig / in-cluster config with it, nothing else): removed.
# Byte-code is written now, as the root filesystem is read-only at run time.
RUN python3 -m venv /opt/kustodian \
    && /opt/kustodian/bin/pip install --no-compile . \
    && /opt/kustodian/bin/pip uninstall -y -q pip setuptools wheel \
    && rm -rf /opt/kustodian/lib/python3*/site-packages/kubernetes/aio \
    && /opt/kustodian/bin/python -m compileall -q -j 0 /opt/kustodian/lib \
    && mkdir -p /tls

FROM ${BASE}
ENV PATH=/opt/kustodian/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 \
    HOME=/tmp
COPY --from=builder /opt/kustodian /opt/kustodian
# a named volume mounted here (docker-compose's `tls`) is writable by the non-root user
COPY --from=builder --chown=65532:65532 /tls /tls
USER 65532:65532
WORKDIR /tmp
# 8443 admission (TLS), 8080 health and metrics (plain HTTP)
EXPOSE 8443 8080
ENTRYPOINT ["kustodian"]
CMD ["--help"]
