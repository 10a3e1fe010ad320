# syntax=docker/dockerfile:1
# tallybot: `docker build -t tallybot .`, then see docs/how-to/docker.md or docker-compose.yml.

# Build stage: the pinned dependencies (requirements.lock, `make lock`), then tallybot itself,
# into a virtualenv.
FROM python:3.11-slim AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
RUN python -m venv /opt/tallybot
COPY requirements.lock ./
RUN /opt/tallybot/bin/pip install --require-hashes -r requirements.lock
COPY pyproject.toml README.md ./
COPY bot ./bot
COPY adapters ./adapters
RUN /opt/tallybot/bin/pip install --no-deps .

# Run stage: the virtualenv only, as a non-root user.
FROM python:3.11-slim
RUN groupadd --system --gid 10001 tallybot \
    && useradd --system --uid 10001 --gid 10001 --home-dir /app --shell /usr/sbin/nologin tallybot \
    && mkdir -p /app/var /app/config \
    && chown -R 10001:10001 /app/var
COPY --from=build /opt/tallybot /opt/tallybot
# MPLCONFIGDIR: matplotlib's config and font cache, on the volume (the root filesystem may be
# read-only); the cache is built below, so no start rebuilds it. TALLYBOT_CONFIG: where
# `tallybot run` reads its configuration.
ENV PATH=/opt/tallybot/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    MPLCONFIGDIR=/app/var/matplotlib \
    TALLYBOT_CONFIG=/app/config/tallybot.toml \
    TALLYBOT_HEALTHCHECK_URL=http://127.0.0.1:8080/healthz
WORKDIR /app
USER 10001:10001
# Build matplotlib's font cache into the image (before VOLUME, so it is kept: a new named
# volume starts with it).
RUN python -c "import matplotlib.font_manager"
# The SQLite store: [store] url = "sqlite+aiosqlite:////app/var/tallybot.sqlite3" (the default,
# "sqlite+aiosqlite:///var/tallybot.sqlite3", is the same file relative to /app).
VOLUME ["/app/var"]
# The ops server ([server] in the config; host = "0.0.0.0" to reach it from outside).
EXPOSE 8080
# Alive means /healthz answers 200; urlopen raises (exit 1) on anything else or no answer.
# Set TALLYBOT_HEALTHCHECK_URL when [server] port is not 8080.
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen(os.environ['TALLYBOT_HEALTHCHECK_URL'], timeout=4)"]
# The configuration is mounted at $TALLYBOT_CONFIG; secrets come from the environment
# (DISCORD_TOKEN, SLACK_BOT_TOKEN, SLACK_APP_TOKEN, SLACK_SIGNING_SECRET, TALLYBOT_PUSH_SECRET,
# or NAME_FILE for each, e.g. Docker secrets under /run/secrets). No terminal: the console
# adapter stays off, and the bot serves until `docker stop` (SIGTERM; it stops within seconds).
# python -m bot: the chart child process (spawn) then imports no more than the drawing needs.
CMD ["python", "-m", "bot", "run"]
