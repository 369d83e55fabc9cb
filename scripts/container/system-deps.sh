#!/usr/bin/env bash
# What `pnpm run test:container` needs from the machine's Debian package sources: podman with the
# runc runtime (crun does not run on every cgroup layout), its networking (netavark, aardvark-dns,
# iptables, slirp4netns), debootstrap (to assemble the base image where no container registry is
# reachable: scripts/container/assemble-base.sh), and the PostgreSQL and Redis servers of
# scripts/system-deps.sh. Installed with apt-get when missing (as root); otherwise a clear failure.
set -euo pipefail
cd "$(dirname "$0")/../.."

bash scripts/system-deps.sh

missing=()
command -v podman > /dev/null || missing+=(podman)
command -v runc > /dev/null || missing+=(runc)
command -v debootstrap > /dev/null || missing+=(debootstrap)
command -v iptables > /dev/null || missing+=(iptables)
command -v slirp4netns > /dev/null || missing+=(slirp4netns)
[ -x /usr/lib/podman/netavark ] || missing+=(netavark)
[ -x /usr/lib/podman/aardvark-dns ] || missing+=(aardvark-dns)
command -v newuidmap > /dev/null || missing+=(uidmap)

if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "container system-deps: missing ${missing[*]}; install them with: sudo apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
  echo "container system-deps: installing ${missing[*]} with apt-get" >&2
  export DEBIAN_FRONTEND=noninteractive
  if ! { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}" > /dev/null; }; then
    echo "container system-deps: apt-get could not install ${missing[*]}; the container test builds and runs the image with podman (runc) and assembles its base with debootstrap" >&2
    exit 1
  fi
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "container system-deps: the container test runs podman as root (debootstrap and runc need it); run it as root" >&2
  exit 1
fi
runtime="${GW_CONTAINER_RUNTIME:-runc}"
command -v "$runtime" > /dev/null || { echo "container system-deps: runtime $runtime not found" >&2; exit 1; }
podman --runtime "$runtime" info > /dev/null 2>&1 || {
  podman --runtime "$runtime" info 2>&1 | tail -5 >&2
  echo "container system-deps: podman does not work on this machine" >&2
  exit 1
}
