# bash completion for ibsmctl (installed as .../bash-completion/completions/ibsmctl)
_ibsmctl() {
  local cur prev words cword
  _init_completion 2>/dev/null || {
    cur=${COMP_WORDS[COMP_CWORD]}
    prev=${COMP_WORDS[COMP_CWORD-1]}
    words=("${COMP_WORDS[@]}")
    cword=$COMP_CWORD
  }
  local commands="status nodes switches lids links routes path ar events check topology resweep reroute loglevel handover dump partition health help"
  local globals="--socket --json --timeout --config --help --version"
  case $prev in
    --socket|--config) COMPREPLY=($(compgen -f -- "$cur")); return ;;
    --timeout|--limit|--since) return ;;
    --type) COMPREPLY=($(compgen -W "SW CA RT" -- "$cur")); return ;;
    --kind) COMPREPLY=($(compgen -W "sweep topology config control trap" -- "$cur")); return ;;
  esac
  # The command is the first word that is not an option or an option's value.
  local cmd="" i n=0 sock=()
  for ((i = 1; i < cword; i++)); do
    case ${words[i]} in
      --socket) sock=(--socket "${words[i+1]}"); ((i++)) ;;
      --config|--timeout) ((i++)) ;;
      -*) ;;
      *) if [ -z "$cmd" ]; then cmd=${words[i]}; else ((n++)); fi ;;
    esac
  done
  if [ -z "$cmd" ]; then
    COMPREPLY=($(compgen -W "$commands $globals" -- "$cur"))
    return
  fi
  # Node names from the running daemon: switch descriptions for SWITCH, host names (first word) for the rest.
  _ibsmctl_nodes() {
    ibsmctl "${sock[@]}" --timeout 2 "$1" 2>/dev/null | awk -v col="$2" 'NR > 1 { print $col }'
  }
  case $cmd in
    routes|ar)
      if [ $n -eq 0 ]; then COMPREPLY=($(compgen -W "$(_ibsmctl_nodes switches 7)" -- "$cur")); return; fi ;;
    path)
      if [ $n -lt 2 ]; then COMPREPLY=($(compgen -W "$(_ibsmctl_nodes nodes 5)" -- "$cur")); return; fi ;;
    loglevel) COMPREPLY=($(compgen -W "error warn info debug" -- "$cur")); return ;;
    dump)
      if [ $n -eq 0 ]; then COMPREPLY=($(compgen -W "lfts" -- "$cur")); return; fi ;;
    partition)
      if [ $n -eq 0 ]; then
        COMPREPLY=($(compgen -W "list show add remove add-member remove-member" -- "$cur")); return
      fi ;;
    health)
      if [ $n -eq 0 ]; then COMPREPLY=($(compgen -W "release --all --help $globals" -- "$cur")); return; fi
      # release NODE/PORT: the isolated ports ibsmd lists.
      if [ $n -eq 1 ]; then
        COMPREPLY=($(compgen -W "$(ibsmctl "${sock[@]}" --timeout 2 health 2>/dev/null |
          awk '$1 == "isolated" { print $2 }')" -- "$cur")); return
      fi ;;
    help) COMPREPLY=($(compgen -W "$commands" -- "$cur")); return ;;
    resweep) COMPREPLY=($(compgen -W "--heavy --help $globals" -- "$cur")); return ;;
    topology) COMPREPLY=($(compgen -W "--dot --help $globals" -- "$cur")); return ;;
    nodes) COMPREPLY=($(compgen -W "--type --help $globals" -- "$cur")); return ;;
    events) COMPREPLY=($(compgen -W "--limit --since --kind --help $globals" -- "$cur")); return ;;
  esac
  COMPREPLY=($(compgen -W "--help $globals" -- "$cur"))
}
complete -F _ibsmctl ibsmctl
