# The ledger-janitor sidecar: `docker build -t ledger-janitor .`
FROM python:3.11-slim

WORKDIR /app
COPY pyproject.toml README.md ./
COPY core core
COPY transport transport
COPY config config
COPY deletion deletion
COPY producers producers
COPY consumers consumers
COPY cursor cursor
COPY audit audit
COPY ledger_janitor ledger_janitor
RUN pip install --no-cache-dir . && rm -rf /root/.cache \
    && mkdir -p /var/lib/ledger-janitor && chown 65534:65534 /var/lib/ledger-janitor

# Its state, where an unprivileged user may write: relative paths (the default
# sqlite:ledger-janitor.db, a properties file) resolve here.
WORKDIR /var/lib/ledger-janitor
VOLUME /var/lib/ledger-janitor

# Unprivileged; the metrics port (/metrics, /health, /ready) is the only one it serves.
USER 65534:65534
EXPOSE 9464
HEALTHCHECK --interval=15s --timeout=3s CMD python -c "import urllib.request,sys; sys.exit(urllib.request.urlopen('http://127.0.0.1:9464/health').status != 200)"
ENTRYPOINT ["ledger-janitor"]
CMD ["run"]
