#!/usr/bin/env bash
# Builds the gateway's image with podman from the repository root (docs/deploy.md, "Build").
#
#   scripts/container/build.sh [-t gateway:dev] [--assemble-base] [--no-cache] [--log FILE]
#
# The machine's npm registry settings reach the build without being written into the image: its
# npmrc files (user and global, less the settings that name paths of this machine) as the build
# secret `npmrc`, the CA bundle npm trusts (`cafile`) as the secret `npm-ca`, and the registry as
# the build argument NPM_CONFIG_REGISTRY. OCI labels get the version, commit and date.
# --assemble-base assembles the base image first (scripts/container/assemble-base.sh) and builds
# with --pull=never, for machines that reach no container registry. Each stage's time is printed
# at the end (and the whole build log is kept with --log).
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
tag="gateway:dev"
assemble=0
log=""
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    -t | --tag) tag="$2"; shift 2 ;;
    --assemble-base) assemble=1; shift ;;
    --log) log="$2"; shift 2 ;;
    *) extra+=("$1"); shift ;;
  esac
done
podman_cmd=(podman --runtime "${GW_CONTAINER_RUNTIME:-runc}")

pull=()
if [ "$assemble" = 1 ]; then
  bash "$root/scripts/container/assemble-base.sh"
  pull=(--pull=never)
fi

secrets="$(mktemp -d "${TMPDIR:-/tmp}/gw-build-secrets.XXXXXX")"
trap 'rm -rf "$secrets"' EXIT
chmod 700 "$secrets"
# Settings that name files or folders of this machine mean nothing inside the build.
: > "$secrets/npmrc"
for file in "$(npm config get globalconfig 2> /dev/null || true)" "$(npm config get userconfig 2> /dev/null || true)"; do
  [ -n "$file" ] && [ -f "$file" ] || continue
  grep -vE '^[[:space:]]*(cafile|nodedir|prefix|cache|globalconfig|userconfig|store-dir)[[:space:]]*=' "$file" >> "$secrets/npmrc" || true
  echo >> "$secrets/npmrc"
done
secret_args=(--secret "id=npmrc,src=$secrets/npmrc")
cafile="$(npm config get cafile 2> /dev/null || true)"
if [ -z "$cafile" ] || [ "$cafile" = null ]; then cafile="${NODE_EXTRA_CA_CERTS:-}"; fi
if [ -n "$cafile" ] && [ -f "$cafile" ]; then
  cp "$cafile" "$secrets/npm-ca"
  secret_args+=(--secret "id=npm-ca,src=$secrets/npm-ca")
fi
registry="$(npm config get registry 2> /dev/null || echo https://registry.npmjs.org/)"

version="$(node -p "require('$root/examples/server/package.json').version")"
revision="$(git -C "$root" rev-parse HEAD 2> /dev/null || echo unknown)"
created="$(date -u +%Y-%m-%dT%H:%M:%SZ)"

[ -n "$log" ] || log="$secrets/build.log"
started=$(date +%s)
set +e
"${podman_cmd[@]}" build --format docker "${pull[@]}" \
  --ulimit "nofile=$(ulimit -n):$(ulimit -n)" --ulimit nproc=32768:32768 \
  "${secret_args[@]}" \
  --build-arg "NPM_CONFIG_REGISTRY=$registry" \
  --build-arg "VERSION=$version" --build-arg "REVISION=$revision" --build-arg "CREATED=$created" \
  -f "$root/Containerfile" -t "$tag" "${extra[@]}" "$root" 2>&1 |
  while IFS= read -r line; do printf '%s %s\n' "$(date +%s)" "$line"; done > "$log"
status=${PIPESTATUS[0]}
set -e
if [ "$status" -ne 0 ]; then
  tail -40 "$log" | cut -d' ' -f2- >&2
  echo "build: podman build failed (exit $status)" >&2
  exit "$status"
fi
# Each stage's time: the sum of its steps (a step lasts until the next line that starts one), and
# the final commit of the image (its layers written) on its own.
awk -v end="$(date +%s)" '
  function close_step(at) { if (stage != "") took[stage] += at - since }
  match($0, /\[[0-9]+\/[0-9]+\] STEP [0-9]+\//) {
    close_step($1); since = $1
    stage = substr($0, RSTART + 1); sub(/\].*/, "", stage)
    if (!(stage in names)) {
      name = "final"; if (match($0, / AS [A-Za-z0-9_-]+/)) name = substr($0, RSTART + 4, RLENGTH - 4)
      names[stage] = name; order[++n] = stage
    }
  }
  / COMMIT / { close_step($1); stage = ""; commit_at = $1 }
  END {
    for (i = 1; i <= n; i++) printf "build: stage %s (%s): %d s\n", order[i], names[order[i]], took[order[i]]
    if (commit_at) printf "build: commit (writing the image): %d s\n", end - commit_at
  }
' "$log" >&2
echo "build: $tag built in $(($(date +%s) - started)) s; $("${podman_cmd[@]}" image inspect --format '{{.Size}}' "$tag" | awk '{ printf "%.1f MB", $1 / 1e6 }')" >&2
