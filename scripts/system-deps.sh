#!/usr/bin/env bash
# The machine packages the tests start for real: a PostgreSQL server (Debian's postgresql) for the
# catalog, a headless Chromium (Debian's chromium, /usr/bin/chromium) for the console's browser
# tests and a Redis server (Debian's redis-server, /usr/bin/redis-server) for the shared response
# cache. Installed with apt-get when missing (as root); otherwise a clear failure. Never a download
# from anywhere but the machine's package sources.
set -euo pipefail

have_postgres() { compgen -G '/usr/lib/postgresql/*/bin/postgres' > /dev/null; }

missing=()
have_postgres || missing+=(postgresql)
[ -x /usr/bin/chromium ] || missing+=(chromium)
[ -x /usr/bin/redis-server ] || missing+=(redis-server)

if [ ${#missing[@]} -eq 0 ]; then exit 0; fi
if [ "$(id -u)" -ne 0 ]; then
  echo "system-deps: missing ${missing[*]}; install it with: sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
echo "system-deps: installing ${missing[*]} with apt-get" >&2
export DEBIAN_FRONTEND=noninteractive
if ! { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}" > /dev/null; }; then
  echo "system-deps: apt-get could not install ${missing[*]}; the catalog tests need a PostgreSQL server, the console tests Chromium, the cache tests redis-server" >&2
  exit 1
fi
have_postgres || { echo "system-deps: postgresql installed but no server binary found" >&2; exit 1; }
[ -x /usr/bin/chromium ] || { echo "system-deps: chromium installed but /usr/bin/chromium is missing" >&2; exit 1; }
[ -x /usr/bin/redis-server ] || { echo "system-deps: redis-server installed but /usr/bin/redis-server is missing" >&2; exit 1; }
