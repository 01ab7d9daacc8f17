#!/bin/sh
# build-progress.sh ARGS...: `go build -v ARGS...` that shows one updating
# line, "compiled N packages: <the last one>", instead of a silent wait or a
# wall of package names. Other output (compile errors) is passed through,
# and the exit status is go build's. GO names the go command (default go).
set -u
tty=0
[ -t 1 ] && tty=1
{ "${GO:-go}" build -v "$@" 2>&1; echo "build-progress-exit $?"; } | awk '
  /^build-progress-exit [0-9]+$/ { code = $2; next }
  # go build -v names each package it compiles on a line of its own.
  /^[^ :#]+$/ { n++; if (tty) { printf "\r\033[K  compiled %d packages: %s", n, $0; fflush() } else if (n % 50 == 0) printf "  compiled %d packages\n", n; next }
  { if (tty && n) printf "\n"; print; fflush() }
  END { if (n) printf "%s  compiled %d package%s\n", (tty ? "\r\033[K" : ""), n, (n == 1 ? "" : "s"); exit code }
' tty="$tty"
