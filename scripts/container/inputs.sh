#!/usr/bin/env bash
# The image's inputs, hashed: what `pnpm run test:container` checks (the Containerfile, what the
# build installs, the image's scripts and test, deploy/, and the gateway's start and stop code).
# test/container/inputs.sha256 holds the hash of the last passing run; .ci/run runs the container
# test only when the working tree's hash differs from it.
#
#   scripts/container/inputs.sh           prints the hash and the files it covers
#   scripts/container/inputs.sh --check   exit 0 when the stamp matches, 1 (and why) when not
#   scripts/container/inputs.sh --write   writes the stamp (test:container does, once it passed)
set -euo pipefail
cd "$(dirname "$0")/../.."
stamp=test/container/inputs.sha256

files() {
  git ls-files --cached --others --exclude-standard -- \
    Containerfile .containerignore .dockerignore \
    package.json pnpm-lock.yaml pnpm-workspace.yaml 'packages/*/package.json' 'examples/*/package.json' \
    bench/package.json \
    deploy scripts/container test/container/image \
    examples/server/src/main.ts examples/server/src/start-gateway.ts examples/server/src/start-settings.ts \
    examples/server/src/start-footprint.ts \
    examples/server/src/catalog/open-catalog.ts packages/catalog/scripts/build-data-template.mjs |
    LC_ALL=C sort -u
}
hash() { files | while IFS= read -r f; do [ -f "$f" ] && printf '%s  %s\n' "$(sha256sum < "$f" | cut -d' ' -f1)" "$f"; done | sha256sum | cut -d' ' -f1; }

case "${1:-}" in
  --check)
    want="$(cat "$stamp" 2> /dev/null || true)"
    have="$(hash)"
    if [ "$want" = "$have" ]; then
      echo "container inputs unchanged since the last passing test:container ($stamp)"
      exit 0
    fi
    echo "container inputs changed since the last passing test:container ($stamp: ${want:-none}, now $have)"
    exit 1
    ;;
  --write) hash > "$stamp" && echo "wrote $stamp: $(cat "$stamp")" ;;
  '') hash && files ;;
  *) echo "usage: $0 [--check|--write]" >&2 && exit 2 ;;
esac
