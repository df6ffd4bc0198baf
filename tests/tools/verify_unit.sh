#!/usr/bin/env bash
# systemd-analyze verify UNIT, failing on a non-zero exit or on any message (verify reports parse errors of
# unit directives as warnings and still exits 0). Further arguments go to verify (the build tree's copy passes
# --man=no: its Documentation= man pages are not installed).
set -u
out=$("$1" verify "${@:3}" "$2" 2>&1)
rc=$?
if [ $rc -ne 0 ] || [ -n "$out" ]; then
  echo "systemd-analyze verify $2: exit $rc"
  echo "$out"
  exit 1
fi
echo "systemd-analyze verify $2: clean"
