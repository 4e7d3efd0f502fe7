#!/usr/bin/env bash
# Builds surge's container image from scratch (Dockerfile) with podman, or buildah if podman is
# missing: a static binary (CGO_ENABLED=0), the CA bundle, an empty /data owned by the image's
# user. Nothing is downloaded but Go modules.
#
#   scripts/image.sh [TAG]        default tag: surge:dev
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
tag=${1:-surge:dev}
ca=/etc/ssl/certs/ca-certificates.crt
[ -f "$ca" ] || { echo "image.sh: no CA bundle at $ca (Debian: apt-get install ca-certificates)" >&2; exit 1; }
ctx=$(mktemp -d -t surge-image.XXXXXX)
trap 'rm -rf "$ctx"' EXIT
CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$ctx/surge" ./cmd/surge
cp "$ca" "$ctx/ca-certificates.crt"
mkdir "$ctx/data"
if command -v podman >/dev/null 2>&1; then
  podman build --format docker -f Dockerfile -t "$tag" "$ctx" >&2
elif command -v buildah >/dev/null 2>&1; then
  buildah bud --format docker -f Dockerfile -t "$tag" "$ctx" >&2
else
  echo "image.sh: neither podman nor buildah found (Debian: apt-get install podman)" >&2
  exit 1
fi
echo "$tag"
