FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 DATA_DIR=/data
# tesseract and its Chinese data: `baibao ingest --ocr` reads scanned PDFs (README, issue 24).
RUN apt-get update \
    && apt-get install -y --no-install-recommends \
       tesseract-ocr tesseract-ocr-chi-sim tesseract-ocr-chi-tra \
    && rm -rf /var/lib/apt/lists/*
RUN useradd --create-home --uid 1000 baibao && mkdir -p /data && chown baibao /data
WORKDIR /app
COPY pyproject.toml README.md ./
COPY bot ./bot
COPY retrieval ./retrieval
COPY novel ./novel
COPY ingest ./ingest
COPY kernel ./kernel
RUN pip install --no-cache-dir .
USER baibao
VOLUME ["/data"]
CMD ["baibao", "run"]
