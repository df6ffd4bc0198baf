# Sourced by tools/demo and tools/test: each stage says what it does and how long it took, and a build shows
# its step count every few seconds, so a slow step is never mistaken for a hang.

# stage NAME CMD...: runs CMD between "== NAME" and "   NAME: N s".
stage() {
  local name=$1 t0=$SECONDS
  shift
  echo "== $name"
  "$@"
  echo "   $name: $((SECONDS - t0)) s"
}

# Reads a ninja build's output: other lines (warnings, errors) pass at once, the "[N/M]" step lines are shown
# as "   build: N/M steps, T s" every 10 s (also when no step ended meanwhile) and at the end.
progress() {
  local line step="0/?" t0=$SECONDS shown=$SECONDS rc
  while :; do
    if IFS= read -r -t 10 line; then
      case $line in
        \[*/*\]*) step=${line%%]*} step=${step#\[} ;;
        "ninja: Entering directory"* | "ninja: no work to do.") ;;
        *) printf '%s\n' "$line" ;;
      esac
    else
      rc=$?
      ((rc > 128)) || break # end of input; above 128: the 10 s passed
    fi
    if ((SECONDS - shown >= 10)); then
      echo "   build: $step steps, $((SECONDS - t0)) s"
      shown=$SECONDS
    fi
  done
  echo "   build: $step steps, $((SECONDS - t0)) s"
}
