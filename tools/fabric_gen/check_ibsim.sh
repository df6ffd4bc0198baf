#!/bin/bash
# Loads a generated fabric into ibsim, discovers it with ibnetdiscover and checks that the discovery equals the
# generated topology (GUIDs, node types, descriptions, links port for port, widths/speeds, LIDs).
#
#   check_ibsim.sh BIN_DIR [ibsm-fabric shape options...]     e.g. check_ibsim.sh build/bin --kary-ntree 4,3
#
# Exit status: 0 equal, 1 different or ibsim/ibnetdiscover failed, 77 ibsim or ibnetdiscover not installed.
set -u
bin=$(cd "${1:?usage: check_ibsim.sh BIN_DIR SHAPE-OPTIONS...}" && pwd) || exit 1
shift
umad2sim=/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so
command -v ibsim >/dev/null && command -v ibnetdiscover >/dev/null && [ -e "$umad2sim" ] || {
  echo "ibsim, ibnetdiscover or umad2sim missing: skipped"
  exit 77
}

# umad2sim leaves ./sys-<pid> behind, and ibsim sockets are per name: use a scratch dir and a unique socket name.
work=$(mktemp -d "${TMPDIR:-/tmp}/ibsm-fabric-check.XXXXXX")
export IBSIM_SOCKNAME="ibsmfab$$"
sim_pid=
cleanup() {
  [ -n "$sim_pid" ] && kill "$sim_pid" 2>/dev/null && wait "$sim_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
cd "$work" || exit 1

"$bin/ibsm-fabric" -q "$@" -o fabric.net || exit 1
# shellcheck disable=SC2046 # the flags are separate words
ibsim -s -n $("$bin/ibsm-fabric" --ibsim-flags fabric.net) fabric.net >ibsim.log 2>&1 &
sim_pid=$!
# ibnetdiscover retries until ibsim's socket exists; the timeout bounds a fabric ibsim refused to load.
LD_PRELOAD=$umad2sim timeout 300 ibnetdiscover >discovered.txt 2>ibnetdiscover.log
rc=$?
if [ $rc -ne 0 ]; then
  echo "ibnetdiscover failed ($rc) on: $*"
  grep -v parse_port_connection_data ibsim.log | tail -5
  tail -5 ibnetdiscover.log
  exit 1
fi
if ! "$bin/ibsm-fabric" --compare fabric.net discovered.txt; then
  echo "ibnetdiscover's view differs from the generated fabric: $*"
  exit 1
fi
