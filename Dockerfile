# syntax=docker/dockerfile:1
# Build stage: install tallybot and its dependencies into a virtualenv.
FROM python:3.11-slim AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
RUN python -m venv /opt/tallybot
COPY pyproject.toml README.md ./
COPY bot ./bot
COPY adapters ./adapters
RUN /opt/tallybot/bin/pip install .

# Run stage: the virtualenv only, as a non-root user.
FROM python:3.11-slim
RUN useradd --system --uid 10001 --home-dir /app --shell /usr/sbin/nologin tallybot \
    && mkdir -p /app/var /app/config \
    && chown -R tallybot /app/var
COPY --from=build /opt/tallybot /opt/tallybot
ENV PATH=/opt/tallybot/bin:$PATH PYTHONUNBUFFERED=1
WORKDIR /app
USER tallybot
VOLUME ["/app/var"]
# Configuration is mounted at /app/config/tallybot.toml; secrets come from the environment.
CMD ["tallybot", "run", "--config", "/app/config/tallybot.toml"]
