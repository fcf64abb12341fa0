# syntax=docker/dockerfile:1
# One image for every component: `kustodian webhook`, `kustodian controllers`,
# `kustodian node-agent`, `kustodian certs ...`.

FROM python:3.11-slim AS builder
WORKDIR /src
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
COPY pyproject.toml README.md ./
COPY kustodian ./kustodian
# wheels for the project and every dependency; nothing of this stage reaches the final image
RUN pip wheel --wheel-dir /wheels .

FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
RUN --mount=type=bind,from=builder,source=/wheels,target=/wheels \
    pip install --no-index --find-links=/wheels kustodian \
    && (pip uninstall -y pip setuptools wheel || true) \
    && mkdir -p /tls && chown 65532:65532 /tls
USER 65532:65532
WORKDIR /tmp
EXPOSE 8443
ENTRYPOINT ["kustodian"]
CMD ["--help"]
