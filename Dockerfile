# syntax=docker/dockerfile:1
# One image for every component: `kustodian webhook`, `kustodian controllers`,
# `kustodian node-agent`, `kustodian certs ...`.
#
#   docker build -t kustodian .                        # python:3.11-slim, wheels from the index
#   podman build --build-arg BASE=localhost/kustodian-base:bookworm ...   # what CI does:
#       see kustodian/testing/image.py (a Debian rootfs as base, wheels built on the host and
#       bind-mounted, PIP_NO_INDEX=1 PIP_FIND_LINKS=/wheels as build args: no network in the build)
#
# The base needs `python3` with its `venv` module (Debian: python3-venv) and `ldd`, and, for the
# compiled extension (setup.py), a C compiler and Python's headers (see the builder). The final
# stage is FROM scratch: the interpreter, its libraries and the virtualenv at /opt/kustodian,
# no shell, no pip, no sources, and neither bench/ nor tests/ nor kustodian/testing
# (.dockerignore keeps them out of the context altogether).

ARG BASE=python:3.11-slim
# The release's version, pyproject.toml's (tests/test_version.py holds this default to it; the
# builder refuses a VERSION the installed package does not have), and the git commit: both are
# passed by `python -m kustodian.testing.image` and the release workflow, and end up in the
# org.opencontainers.image.* labels and in `kustodian version`. A plain `docker build .` knows no
# commit (.git is not in the context): the image then claims none.
ARG VERSION=0.2.0
ARG REVISION=

FROM ${BASE} AS builder
ARG VERSION
ARG REVISION
# PIP_NO_INDEX / PIP_FIND_LINKS: empty for a normal build; set to install from a local wheel
# directory (an offline build). pip reads them from the environment.
ARG PIP_NO_INDEX=
ARG PIP_FIND_LINKS=
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONDONTWRITEBYTECODE=1
WORKDIR /src
# setup.py's extension (kustodian.policy.capacity._native, Cython) is optional to pip: without
# a C compiler the install goes on with the pure-Python planner. The image should always have it.
# CI's Debian base brings gcc and the headers (kustodian/testing/image.py, BASE_PACKAGES) and
# builds with no network, so apt-get must not run there; python:3.11-slim has the headers but no
# gcc, so a default `docker build` installs it here, only when it is missing. The builder is
# thrown away: nothing of the compiler reaches the FROM scratch stage.
RUN command -v gcc >/dev/null || { apt-get update -q \
        && apt-get install -y -q --no-install-recommends gcc libc6-dev \
        && rm -rf /var/lib/apt/lists/*; }
COPY pyproject.toml setup.py README.md ./
COPY kustodian ./kustodian
# Kustodian uses the kubernetes package to read kubeconfig / in-cluster config, nothing else.
# The package ships an asyncio copy of its client (aio/, which needs aiohttp) and the generated
# API classes (client/api/, loaded lazily, by attribute): neither is ever imported, both are
# removed (~70 MB). The generated models are loaded lazily too: kept, but not compiled.
# Byte-code for the rest is written now: the root filesystem is read-only at run time. Importing
# the extension fails the build if it was not compiled (pip only warns); -P: the installed one,
# not /src's.
RUN python3 -m venv /opt/kustodian \
    && KUSTODIAN_BUILD_COMMIT="${REVISION}" /opt/kustodian/bin/pip install --no-compile . \
    && /opt/kustodian/bin/python -P -c 'import kustodian.policy.capacity._native' \
    && /opt/kustodian/bin/python -P -c 'import sys; from importlib.metadata import version; \
v = version("kustodian"); sys.exit(0 if v == sys.argv[1] else f"VERSION={sys.argv[1]} but the package is {v}")' \
        "${VERSION}" \
    && /opt/kustodian/bin/pip uninstall -y -q aiohttp aiohttp-retry aiohappyeyeballs aiosignal frozenlist \
        multidict propcache yarl attrs \
    && /opt/kustodian/bin/pip uninstall -y -q pip setuptools wheel \
    && rm -rf /opt/kustodian/lib/python3*/site-packages/kubernetes/aio \
        /opt/kustodian/lib/python3*/site-packages/kubernetes/client/api \
    && /opt/kustodian/bin/python -m compileall -q -j 0 -x 'kubernetes/client/models/' /opt/kustodian/lib
COPY docker/runtime_rootfs.py /src/docker/
RUN python3 /src/docker/runtime_rootfs.py

# The interpreter, the libraries it loads, the virtualenv: nothing else (docker/runtime_rootfs.py).
# /tls belongs to the non-root user, so a named volume mounted there (docker-compose) is writable.
FROM scratch
ARG VERSION
ARG REVISION
LABEL org.opencontainers.image.title="kustodian" \
      org.opencontainers.image.description="Kubernetes storage custodian: deletion guard, reclaim-space policy and storage-tidying controllers" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.source="https://github.com/kustodian/kustodian" \
      org.opencontainers.image.url="https://github.com/kustodian/kustodian" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=builder /rootfs /
ENV PATH=/opt/kustodian/bin:/usr/local/bin:/usr/bin:/bin \
    PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 \
    HOME=/tmp
USER 65532:65532
WORKDIR /tmp
# 8443 admission (TLS), 8080 health and metrics (plain HTTP)
EXPOSE 8443 8080
ENTRYPOINT ["kustodian"]
CMD ["--help"]
