# Nonce Arena: the web app on a CPU, models converted at build time, votes on a volume.
#   docker build -t nonce-arena . && docker run -p 7860:7860 -v nonce-votes:/data nonce-arena
FROM python:3.11-slim

# WordNet 3.0 for the definition reader (NLTK reads the Debian files; README, "Models")
RUN apt-get update \
    && apt-get install -y --no-install-recommends wordnet-base wordnet-sense-index \
    && rm -rf /var/lib/apt/lists/*

ENV PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    HF_HUB_OFFLINE=1 \
    NONCE_CACHE_DIR=/opt/nonce-arena/cache \
    NONCE_DB=/data/votes.sqlite \
    GRADIO_SERVER_NAME=0.0.0.0 \
    GRADIO_SERVER_PORT=7860

WORKDIR /app

# the user the app runs as owns its cache and vote folders before anything is written there,
# so no later `chown -R` copies the converted models into a second layer
RUN useradd --create-home --uid 1000 app \
    && mkdir -p /data /opt/nonce-arena/cache \
    && chown app /data /opt/nonce-arena /opt/nonce-arena/cache

# torch first, from the CPU index, so requirements.txt cannot pull a CUDA build
RUN pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu
COPY requirements.txt .
RUN pip install -r requirements.txt

# convert the embedded models once, into the image (the app then loads them in seconds). The
# conversion needs only the library, copied alone first: an edit anywhere else keeps this layer
COPY backends/ backends/
USER app
RUN python -m backends fetch

COPY . .
VOLUME /data
EXPOSE 7860
CMD ["python", "app.py"]
