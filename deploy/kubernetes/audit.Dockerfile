# The audit's image: Apache Spark's (Java 17, spark-submit and the executor entry point Spark
# on Kubernetes starts executors with) with this project installed, so the driver and every
# executor import it from site-packages: no --py-files and no PYTHONPATH are needed.
#   docker build -f deploy/kubernetes/audit.Dockerfile -t ledger-janitor-audit:0.1.0 .
ARG SPARK_VERSION=4.0.0
FROM spark:${SPARK_VERSION}-python3
ARG SPARK_VERSION

USER root
WORKDIR /opt/ledger-janitor/src
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
# PySpark pinned to the image's Spark: the executors' Python workers and spark-submit's
# driver must speak the same version.
RUN pip install --no-cache-dir ".[audit]" "pyspark==${SPARK_VERSION}" \
    && ln -s "$(python3 -c 'import ledger_janitor.audit_main as m; print(m.__file__)')" \
        /opt/ledger-janitor/audit_main.py \
    && rm -rf /opt/ledger-janitor/src /root/.cache

WORKDIR /opt/ledger-janitor
ENV PYSPARK_PYTHON=python3 HOME=/tmp
# Spark's own user; the entry point stays Spark's (/opt/entrypoint.sh) for the executors.
USER 185
