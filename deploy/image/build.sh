#!/usr/bin/env bash
# Build the images of the docker-compose stack, locally (no image registry is
# needed or used):
#   ubernetes-base:bookworm  a minimal Debian 12 root made with debootstrap
#                            from Debian's mirror (built once, then reused);
#   ubernetes:local          that base + the ubernetes binary + etcd.
#
#   deploy/image/build.sh [UBERNETES_BINARY]
#
# UBERNETES_BINARY defaults to target/release/ubernetes (built with
# `cargo build --release -p ubernetes` when missing). etcd is the host's
# (Debian's etcd-server, installed with apt when missing), so the image holds
# exactly what the tests run against. Needs root (debootstrap, docker) and a
# running Docker engine.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$(pwd)

BASE_IMAGE=ubernetes-base:bookworm
IMAGE=ubernetes:local
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}

bin=${1:-$root/target/release/ubernetes}
if [ ! -x "$bin" ]; then
  echo "==> building the release binary (cargo build --release -p ubernetes)"
  cargo build --release -p ubernetes
fi

need() { command -v "$1" >/dev/null 2>&1 || { echo "==> installing $2 (apt-get)"; apt-get install -y "$2" >/dev/null 2>&1 || { apt-get update >/dev/null 2>&1 && apt-get install -y "$2" >/dev/null; }; }; }
need debootstrap debootstrap
need etcd etcd-server

if ! docker image inspect "$BASE_IMAGE" >/dev/null 2>&1; then
  echo "==> making the base image $BASE_IMAGE with debootstrap (minbase, bookworm; a few minutes, once)"
  rootfs=$(mktemp -d /tmp/ubernetes-rootfs.XXXXXX)
  trap 'rm -rf "$rootfs"' EXIT
  debootstrap --variant=minbase --include=ca-certificates,curl bookworm "$rootfs" "$MIRROR" >/tmp/ubernetes-debootstrap.log 2>&1 \
    || { echo "debootstrap failed; see /tmp/ubernetes-debootstrap.log" >&2; exit 1; }
  # Keep the image small: no package lists, caches or docs.
  rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/* "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/*
  tar -C "$rootfs" -c . | docker import - "$BASE_IMAGE" >/dev/null
  rm -rf "$rootfs"
  trap - EXIT
fi

echo "==> building $IMAGE from $bin"
ctx=$(mktemp -d /tmp/ubernetes-image.XXXXXX)
trap 'rm -rf "$ctx"' EXIT
cp "$bin" "$ctx/ubernetes"
cp "$(command -v etcd)" "$ctx/etcd"
cp deploy/image/Dockerfile "$ctx/Dockerfile"
docker build -q -t "$IMAGE" "$ctx" >/dev/null
echo "==> $IMAGE is built ($(docker image inspect -f '{{.Size}}' "$IMAGE" | awk '{printf "%.0f MB", $1/1e6}'))"
