# bash completion for rewind, installed as share/bash-completion/completions/rewind.
# Hand-written from `rewind --help`; tests/install_test.cc (Completion.*) fails when an
# option of --help is missing here, is listed here but gone from --help, or is listed
# among the wrong kind (taking a value or not).

_rewind_commands="replay list status verify ingest stress help version"
# Long options that take no value.
_rewind_flags="--help --version --password --all --resume --reshape --stop-on-failure --follow --quiet --json
  --quick --keep --dry-run --allow-empty --from-start"
# Long options that take a value (the next word).
_rewind_valued="--socket --host --port --user --database --connect-timeout --config
  --events-table --id-column --type-column --type-path --payload-column --event-class
  --uuid-column --time-column --poll --settle --reconcile --settle-ids --cutover-timeout --batch-size
  --max-in-flight --read-connections --result-buffer --read-host --read-port --read-socket
  --read-wait --read-check --flush-every --flush-max-rows --write-every --models
  --progress --stats-json --only --stress-database --out --repeat --budget-ms --sample --max-events-per-second
  --throttle-threads-running --max-failures --until-id --until-time --into --against
  --format --textfile"

_rewind() {
  local cur prev word command=""
  COMPREPLY=()
  cur=${COMP_WORDS[COMP_CWORD]}
  prev=${COMP_WORDS[COMP_CWORD - 1]}

  # The value of an option: files where the option names one, else nothing to offer.
  case "$prev" in
    --config | --models | --stats-json | --textfile | --socket | -S | --read-socket)
      COMPREPLY=($(compgen -f -- "$cur"))
      return 0
      ;;
    --out)
      COMPREPLY=($(compgen -d -- "$cur"))
      return 0
      ;;
    --progress)
      COMPREPLY=($(compgen -W "auto bar plain none" -- "$cur"))
      return 0
      ;;
    --read-check)
      COMPREPLY=($(compgen -W "counts full" -- "$cur"))
      return 0
      ;;
    --format)
      COMPREPLY=($(compgen -W "text json prometheus" -- "$cur"))
      return 0
      ;;
    -P | -u | -D)
      return 0
      ;;
  esac
  local valued
  for valued in $_rewind_valued; do
    [ "$prev" = "$valued" ] && return 0
  done

  # The command: the first word that is not an option or an option's value.
  local i=1
  while [ $i -lt $COMP_CWORD ]; do
    word=${COMP_WORDS[i]}
    case " $_rewind_valued -S -P -u -D " in
      *" $word "*) i=$((i + 2)); continue ;;
    esac
    if [ "${word#-}" = "$word" ]; then
      command=$word
      break
    fi
    i=$((i + 1))
  done

  if [ "${cur#-}" != "$cur" ]; then
    COMPREPLY=($(compgen -W "$_rewind_flags $_rewind_valued" -- "$cur"))
  elif [ -z "$command" ]; then
    COMPREPLY=($(compgen -W "$_rewind_commands" -- "$cur"))
  elif [ "$command" = ingest ]; then
    COMPREPLY=($(compgen -f -- "$cur"))  # access log files
  fi
  return 0
}
complete -F _rewind rewind
