#!/usr/bin/env bash
# Makes sure the machine has what `make dev` and `make test` need beyond Go:
# the PostgreSQL server binaries (initdb, postgres, with pg_trgm), python3, and
# Chromium, which the web app's browser test (services/stack) drives headless.
# As root it installs them with apt-get; otherwise it prints the command.
set -euo pipefail

missing=()
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && ! command -v initdb >/dev/null 2>&1; then
  missing+=(postgresql)
fi
if [ ! -x /usr/bin/python3 ] && ! command -v python3 >/dev/null 2>&1; then
  missing+=(python3)
fi
if ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-browser >/dev/null 2>&1; then
  missing+=(chromium)
fi
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing ${missing[*]} with apt-get" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
  # Debian's package may start a system cluster; ours are private, so it is not needed.
  exit 0
fi
echo "missing: ${missing[*]}. Install with:" >&2
echo "  sudo apt-get install -y ${missing[*]}" >&2
exit 1
