# syntax=docker/dockerfile:1
#
# Strata images. Targets:
#   cuda (default)  docker build -t strata:cuda .
#   cpu             docker build --target cpu -t strata:cpu .
#
# Every stage is Debian 12, the distribution the README's setup script is written and tested for. The CUDA 13
# toolchain comes from NVIDIA's Debian 12 repository rather than from an nvidia/cuda Ubuntu image: an Ubuntu
# 24.04 build would link against other versions of spdlog, yaml-cpp, prometheus-cpp and cpp-httplib, and would
# bring Catch2 v3 where the project uses v2, so the build would no longer be the one CI proves with
# scripts/setup-build.sh. Both runtime targets are debian:12-slim carrying the binary and exactly the shared
# libraries it links (deploy/docker/stage-runtime.sh), which for the CUDA build includes the CUDA runtime
# libraries; the driver itself is mounted by the NVIDIA container toolkit.

# Pin by digest (debian:12@sha256:...) for reproducible releases; see docs/OPERATIONS.md.
ARG DEBIAN_IMAGE=debian:12
ARG DEBIAN_SLIM_IMAGE=debian:12-slim

# ---------------------------------------------------------------------------------------------------------------
FROM ${DEBIAN_IMAGE} AS build-base
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates curl gnupg \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src

# ---------------------------------------------------------------------------------------------------------------
FROM build-base AS build-cpu
COPY . /src
RUN scripts/setup-build.sh --cuda off --no-tests --target strata \
 && deploy/docker/stage-runtime.sh build/strata /staging models/strata-tiny

# ---------------------------------------------------------------------------------------------------------------
FROM build-base AS cuda-toolchain
# cuda-minimal-build is nvcc, the CUDA runtime and CCCL headers; the extra packages are the CUDA libraries the
# backend links. Override both to follow the cuda/ component if it starts linking more.
ARG CUDA_REPO=https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64
ARG CUDA_KEYRING=cuda-keyring_1.1-1_all.deb
ARG CUDA_PACKAGE_VERSION=13-0
ARG CUDA_EXTRA_PACKAGES="libcublas-dev-13-0"
RUN curl -fsSLo /tmp/cuda-keyring.deb "${CUDA_REPO}/${CUDA_KEYRING}" \
 && dpkg -i /tmp/cuda-keyring.deb \
 && rm /tmp/cuda-keyring.deb \
 && apt-get update \
 && apt-get install -y --no-install-recommends "cuda-minimal-build-${CUDA_PACKAGE_VERSION}" ${CUDA_EXTRA_PACKAGES} \
 && rm -rf /var/lib/apt/lists/*
# H200/H100 are sm_90; CMake reads CUDAARCHS as the default for CMAKE_CUDA_ARCHITECTURES.
ARG CUDA_ARCHS=90
ENV PATH=/usr/local/cuda/bin:${PATH} \
    CUDACXX=/usr/local/cuda/bin/nvcc \
    CUDAARCHS=${CUDA_ARCHS}

# ---------------------------------------------------------------------------------------------------------------
FROM cuda-toolchain AS build-cuda
COPY . /src
RUN scripts/setup-build.sh --cuda on --no-tests --target strata \
 && deploy/docker/stage-runtime.sh build/strata /staging models/strata-tiny

# ---------------------------------------------------------------------------------------------------------------
FROM ${DEBIAN_SLIM_IMAGE} AS runtime-base
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
# curl serves the HEALTHCHECK; tini reaps children and forwards SIGTERM so that the server's drain runs.
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates curl tini \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 10001 strata \
 && useradd --system --uid 10001 --gid strata --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin strata \
 && mkdir -p /models /etc/strata \
 && chmod 0755 /models /etc/strata
ENV PATH=/opt/strata/bin:${PATH} \
    LD_LIBRARY_PATH=/opt/strata/lib \
    STRATA_HOST=0.0.0.0 \
    STRATA_PORT=8080 \
    STRATA_LOG_FORMAT=json
EXPOSE 8080
# Loading a large model takes minutes: the start period keeps Docker from calling the container unhealthy while
# /health answers 503 for loading.
HEALTHCHECK --interval=15s --timeout=5s --start-period=600s --retries=3 \
  CMD curl -fsS -o /dev/null "http://127.0.0.1:${STRATA_PORT}/health" || exit 1
USER 10001:10001
ENTRYPOINT ["/usr/bin/tini", "--", "strata"]
# The port comes from STRATA_PORT, so that the HEALTHCHECK and the server cannot disagree about it.
CMD ["serve", "--host", "0.0.0.0", "--model", "/models"]

# ---------------------------------------------------------------------------------------------------------------
FROM runtime-base AS cpu
COPY --from=build-cpu /staging/ /
ENV STRATA_DEVICE=cpu

# ---------------------------------------------------------------------------------------------------------------
FROM runtime-base AS cuda
COPY --from=build-cuda /staging/ /
# Ask the NVIDIA container toolkit for the compute driver libraries and nvidia-smi.
ENV STRATA_DEVICE=cuda \
    NVIDIA_VISIBLE_DEVICES=all \
    NVIDIA_DRIVER_CAPABILITIES=compute,utility \
    NVIDIA_REQUIRE_CUDA="cuda>=13.0"
