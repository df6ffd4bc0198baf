# Sourced by the repair benchmarks (dfly_repair_bench, dor_repair_bench): ibsim on a generated fabric with
# ibsmd as a daemon with its defaults on it. The caller sets fabric_args (ibsm-fabric's) and calls
# start_fabric; $work/fabric.net is the fabric. `step TAG CONSOLE-COMMAND` then sends a command to ibsim's
# console, waits for the TOPO001 events it causes to settle, prints them (converged time, routes changed, LFT
# blocks, VL table Sets) and checks the switches' tables read back (ibnetdiscover + dump_lfts, ibsm-route
# --lfts-in: reachable pairs, max link load). Needs a build (tools/build).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${IBSM_BUILD_DIR:-$top/build}  # as tools/build
bin=$build/bin
umad2sim=/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so
work=$(mktemp -d /tmp/ibsm-repair-XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
# The peer of switch port SW P ("S-<guid>" and a port number) in the fabric, as "S-<guid>[port]".
peer() { awk -v sw="$1" -v p="$2" '/^Switch/ {s = $3; gsub(/"/, "", s)} s == sw && $0 ~ "^\\[" p "\\]" {
  match($0, /"S-[0-9a-f]+"\[[0-9]+\]/); x = substr($0, RSTART, RLENGTH); gsub(/"/, "", x); print x; exit}' \
  "$work/fabric.net"; }
waitfor() {  # waitfor FILE PATTERN MIN-COUNT
  for _ in $(seq 6000); do
    local n; n=$(grep -c -- "$2" "$1" 2>/dev/null) || true
    [ "${n:-0}" -ge "$3" ] && return 0
    sleep 0.1
  done
  echo "timed out waiting for '$2' in $1" >&2; tail -5 "$1" >&2; exit 1
}
quiet() {  # until no new TOPO001 for 3 s
  local n m; n=$(grep -c TOPO001 "$1" || true)
  while sleep 3; m=$(grep -c TOPO001 "$1" || true); [ "$m" != "$n" ]; do n=$m; done
}
check() {  # check TAG: the live tables checked by ibsm-route
  local host=H-0000000000100000
  (cd "$work" && SIM_HOST=$host LD_PRELOAD=$umad2sim ibnetdiscover >"$1.topo" 2>/dev/null &&
    SIM_HOST=$host LD_PRELOAD=$umad2sim dump_lfts 2>/dev/null | grep -v '^\*\*\*' >"$1.lfts")
  "$bin/ibsm-route" --topology "$work/$1.topo" --lfts-in "$work/$1.lfts" --no-cdg --json |
    python3 -c 'import json,sys; c=json.load(sys.stdin)["check"]
print("  %s: pairs %d, unreachable %d, max/mean link load %d / %.1f" % (sys.argv[1], c["pairs"], c["unreachable"], c["maxLoad"], c["meanLoad"]))' "$1"
}
generate_fabric() {  # the fabric of fabric_args, in $work/fabric.net
  "$bin/ibsm-fabric" -q "${fabric_args[@]}" -o "$work/fabric.net"
}
start_fabric() {  # ibsim on $work/fabric.net, ibsmd on it up to SUBNET UP, the initial tables checked
  local simflags
  read -r -a simflags <<<"$("$bin/ibsm-fabric" --ibsim-flags "$work/fabric.net")"
  rm -f "$work/console"; mkfifo "$work/console"
  export IBSIM_SOCKNAME="repair$$"
  (cd "$work" && exec ibsim -s "${simflags[@]}" fabric.net <console >ibsim.log 2>&1) &
  pids+=($!)
  exec 3>"$work/console"
  for _ in $(seq 1000); do grep -q "@$IBSIM_SOCKNAME:ctl@" /proc/net/unix && break; sleep 0.01; done
  log=$work/ibsmd.out
  (cd "$work" && LD_PRELOAD="$umad2sim" exec "$bin/ibsmd" --state-dir "$work/state" --socket "$work/ibsm.sock" \
    --sweep-interval 0 ${IBSMD_ARGS:-} >"$log" 2>&1) &  # IBSMD_ARGS: more options, e.g. --set KEY=VALUE
  pids+=($!)
  waitfor "$log" "SUBNET UP" 1
  grep -E "TOPO001|SUBNET UP|routing:" "$log" | head -3 | cut -c1-300
  quiet "$log"
  check initial
}
step() {  # step TAG CONSOLE-COMMAND
  local from; from=$(wc -l <"$log")
  echo "$2" >&3
  waitfor "$log" "TOPO001" $(($(grep -c TOPO001 "$log" || true) + 1))
  quiet "$log"
  echo "$1: $2"
  tail -n +"$((from + 1))" "$log" | grep TOPO001 | sed 's/.*TOPO001 /  /; s/ CAUSE=.*//'
  check "$1"
}
link_cmd() {  # link_cmd SW P: the console command that cables switch port SW P to its peer again
  echo "Link \"$1\"[$2] \"$(peer "$1" "$2" | sed 's/\[/"[/')"
}
