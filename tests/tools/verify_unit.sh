#!/usr/bin/env bash
# systemd-analyze verify UNIT, failing on a non-zero exit or on any message (verify reports parse errors of
# unit directives as warnings and still exits 0).
set -u
out=$("$1" verify "$2" 2>&1)
rc=$?
if [ $rc -ne 0 ] || [ -n "$out" ]; then
  echo "systemd-analyze verify $2: exit $rc"
  echo "$out"
  exit 1
fi
echo "systemd-analyze verify $2: clean"
