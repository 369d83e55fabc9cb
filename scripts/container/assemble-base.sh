#!/usr/bin/env bash
# Assembles the Containerfile's default base image (an official Node image name, such as
# docker.io/library/node:22-bookworm-slim) from what this machine can have, for machines that
# reach no container registry (docs/deploy.md, "Building without a registry"):
#
#   - a minimal Debian root made by debootstrap (--variant=minbase) from the machine's Debian
#     package sources,
#   - the Node binary of the npm registry's `node@<major>` package (the one .ci/run uses),
#   - the machine's npm (pure JavaScript) as /usr/local/bin/npm,
#   - the `node` user (uid and gid 1000, home /home/node), as the official images have it.
#
# Tagged under the official name, so `podman build --pull=never` uses it. Cached by a hash of its
# inputs (this script, the Node binary, npm's version, the Debian suite and mirror): the image
# carries the hash as the label gw.base.inputs, and the debootstrap root is kept as a tarball in
# ${GW_CONTAINER_CACHE:-~/.cache/gw-container}. Nothing is assembled when the hash matches.
#
# Usage: scripts/container/assemble-base.sh [image-name]   (default: the Containerfile's NODE_IMAGE)
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
image="${1:-$(sed -n 's/^ARG NODE_IMAGE=//p' "$root/Containerfile" | head -1)}"
podman_cmd=(podman --runtime "${GW_CONTAINER_RUNTIME:-runc}")

# docker.io/library/node:22-bookworm-slim → major 22, suite bookworm.
tag="${image##*:}"
major="${tag%%-*}"
suite="$(echo "$tag" | cut -d- -f2)"
case "$major" in '' | *[!0-9]*) echo "assemble-base: cannot read a Node major from \"$image\"" >&2; exit 1 ;; esac
case "$suite" in bookworm | trixie | bullseye) ;; *) echo "assemble-base: cannot read a Debian suite from \"$image\"" >&2; exit 1 ;; esac

mirror="${GW_DEBIAN_MIRROR:-}"
if [ -z "$mirror" ]; then
  mirror="$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | grep -v security | head -1)"
  [ -n "$mirror" ] || mirror="$(awk '$1 == "deb" && $3 !~ /security/ { print $2; exit }' /etc/apt/sources.list 2>/dev/null)"
  [ -n "$mirror" ] || mirror="http://deb.debian.org/debian"
fi

command -v debootstrap > /dev/null || {
  echo "assemble-base: debootstrap is missing (apt-get install debootstrap)" >&2
  exit 1
}

# The Node binary of the requested major, from the npm registry's `node` package.
node_bin="$(npx -y "node@$major" -p process.execPath)"
[ -x "$node_bin" ] || { echo "assemble-base: npx node@$major gave no Node binary" >&2; exit 1; }
npm_dir="$(npm root -g)/npm"
[ -f "$npm_dir/package.json" ] || { echo "assemble-base: no npm at $npm_dir" >&2; exit 1; }
npm_version="$(node -p "require('$npm_dir/package.json').version")"

inputs="$(
  {
    sha256sum "$0" | cut -d' ' -f1
    sha256sum "$node_bin" | cut -d' ' -f1
    echo "npm $npm_version"
    echo "debian $suite $mirror $(uname -m)"
  } | sha256sum | cut -d' ' -f1
)"

if "${podman_cmd[@]}" image exists "$image"; then
  have="$("${podman_cmd[@]}" image inspect --format '{{ index .Labels "gw.base.inputs" }}' "$image" 2> /dev/null || true)"
  if [ "$have" = "$inputs" ]; then
    echo "assemble-base: $image is up to date (inputs $inputs)" >&2
    exit 0
  fi
  if [ -z "$have" ]; then
    # A real official image (pulled on a machine with a registry) is never replaced.
    echo "assemble-base: $image exists and was not assembled here; keeping it" >&2
    exit 0
  fi
fi

cache="${GW_CONTAINER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gw-container}"
mkdir -p "$cache"
# Raise when the debootstrap command or the trimming below changes.
debian_recipe=1
debian_key="$(echo "$suite $mirror $(uname -m) $debian_recipe" | sha256sum | cut -c1-16)"
debian_tar="$cache/debian-$suite-minbase-$debian_key.tar"
work="$(mktemp -d "${TMPDIR:-/tmp}/gw-base.XXXXXX")"
trap 'rm -rf "$work"' EXIT

started=$(date +%s)
if [ ! -f "$debian_tar" ]; then
  echo "assemble-base: debootstrap --variant=minbase $suite from $mirror" >&2
  debootstrap --variant=minbase "$suite" "$work/root" "$mirror" > "$work/debootstrap.log" 2>&1 || {
    tail -20 "$work/debootstrap.log" >&2
    echo "assemble-base: debootstrap failed" >&2
    exit 1
  }
  # What a slim image leaves out: package caches and lists, documentation.
  rm -rf "$work/root/var/cache/apt/archives/"*.deb "$work/root/var/lib/apt/lists/"* \
    "$work/root/usr/share/doc/"* "$work/root/usr/share/man/"* "$work/root/usr/share/info/"*
  tar -C "$work/root" -cf "$debian_tar.tmp" . && mv "$debian_tar.tmp" "$debian_tar"
  rm -rf "$work/root"
fi

mkdir "$work/root"
tar -C "$work/root" -xf "$debian_tar"
install -D -m 0755 "$node_bin" "$work/root/usr/local/bin/node"
mkdir -p "$work/root/usr/local/lib/node_modules"
cp -a "$npm_dir" "$work/root/usr/local/lib/node_modules/npm"
ln -s ../lib/node_modules/npm/bin/npm-cli.js "$work/root/usr/local/bin/npm"
ln -s ../lib/node_modules/npm/bin/npx-cli.js "$work/root/usr/local/bin/npx"
chroot "$work/root" groupadd --gid 1000 node
chroot "$work/root" useradd --uid 1000 --gid node --shell /bin/bash --create-home node

tar -C "$work/root" -c . | "${podman_cmd[@]}" import \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change "ENV NODE_VERSION=$("$node_bin" -p 'process.versions.node')" \
  --change 'CMD ["node"]' \
  --change "LABEL gw.base.inputs=$inputs" \
  --quiet --message "assembled by scripts/container/assemble-base.sh" \
  - "$image" > /dev/null
echo "assemble-base: $image assembled in $(($(date +%s) - started)) s (inputs $inputs)" >&2
