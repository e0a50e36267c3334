# bash completion for idem(1)                                      -*- shell-script -*-
#
# Completes subcommands (asked of the idem being completed, `idem --list-commands`), each
# subcommand's flags, the values some flags take (time zones for `expect --tz`, from the zoneinfo
# folder), record keys (show, status, log, tail, rm, and -k/--key of run, begin and end) read
# from the store with `idem ls --all --keys`, and the patterns of `idem expect` read with
# `idem expect --list`, honouring a --db given on the command line. Works with or without the bash-completion package; uses its
# helpers for file and command names when they are there.

# _idem_flags SUBCOMMAND: the flags SUBCOMMAND accepts, global ones included ("": before one). A
# subcommand without its line here gets the long flags its --help lists.
_idem_flags() {
  local global="--store --db -h --help"
  case $1 in
    run) echo "-k --key --ttl --wait --serial --serial-wait --timeout --kill-after --drain --lease --replay-failures --retry-abandoned --kill-stale" \
      "--hash-stdin --max-output --pty --on-failure --on-change --notify-timeout --quiet-replay -q --quiet -v --verbose $global" ;;
    ls) echo "--status --prefix --front --since --until --limit --all --json --keys $global" ;;
    show) echo "--json --stdout --stderr --request --attempts $global" ;;
    log) echo "--json $global" ;;
    tail) echo "-f --follow $global" ;;
    status) echo "$global" ;;
    rm) echo "--force $global" ;;
    gc) echo "--dry-run --older-than $global" ;;
    expect) echo "--every --cron --tz --grace --max-runtime --at-most --list --rm --json $global" ;;
    check) echo "--json $global" ;;
    export) echo "--status --prefix --limit --all $global" ;;
    import) echo "--replace $global" ;;
    doctor) echo "--json --config --hooks --template $global" ;;
    serve) echo "--config --upstream --ledger --ui --ui-listen --socket --listen --allow-remote --port-file --max-connections" \
      "--hooks --urlprefix --template --response-header --http-methods" \
      "--request-timeout --grace --busy-timeout --keep-attempts --lease --cert --key --tls-min-version --pidfile $global" ;;
    each) echo "--key-field --ttl --lease --jobs --timeout --kill-after --max-output --replay-failures --retry-abandoned --on-failure --on-change --notify-timeout -q --quiet -v --verbose $global" ;;
    begin) echo "-k --key --ttl --wait --owner-pid --fingerprint --hash-stdin --print --retry-abandoned --kill-stale -q --quiet $global" ;;
    end) echo "-k --key --exit --stdout-file --stderr-file --owner-pid $global" ;;
    "") echo "$global --version" ;;
    *)
      "$_idem_cmd" "$1" --help 2>/dev/null | grep -oE -- '--[a-z][a-z0-9-]*' | LC_ALL=C sort -u | tr '\n' ' '
      echo "$global"
      ;;
  esac
}

# _idem_takes_value SUBCOMMAND FLAG: FLAG is followed by a value (which is then no positional).
_idem_takes_value() {
  case $1:$2 in
    *:--db | *:--store | \
      run:-k | run:--key | run:--ttl | run:--wait | run:--serial | run:--serial-wait | run:--timeout | run:--kill-after | run:--lease | \
      run:--drain | run:--max-output | run:--on-failure | run:--on-change | run:--notify-timeout | \
      ls:--status | ls:--prefix | ls:--front | ls:--since | ls:--until | ls:--limit | export:--status | export:--prefix | export:--limit | \
      gc:--older-than | doctor:--config | doctor:--hooks | \
      expect:--every | expect:--cron | expect:--tz | expect:--grace | expect:--max-runtime | expect:--at-most | \
      serve:--config | serve:--upstream | serve:--socket | serve:--listen | serve:--port-file | serve:--max-connections | \
      serve:--request-timeout | serve:--grace | serve:--busy-timeout | serve:--keep-attempts | serve:--lease | \
      show:--attempts | \
      serve:--hooks | serve:--urlprefix | serve:--response-header | serve:--http-methods | \
      serve:--cert | serve:--key | serve:--tls-min-version | serve:--pidfile | \
      each:--key-field | each:--ttl | each:--lease | each:--jobs | each:--timeout | each:--kill-after | \
      each:--max-output | each:--on-failure | each:--on-change | each:--notify-timeout | \
      begin:-k | begin:--key | begin:--ttl | begin:--wait | begin:--owner-pid | begin:--fingerprint | \
      end:-k | end:--key | end:--exit | end:--stdout-file | end:--stderr-file | end:--owner-pid)
      return 0 ;;
  esac
  return 1
}

# _idem_add WORD...: adds to COMPREPLY each $_idem_pre$WORD that starts with what was typed,
# without the part readline does not replace (up to the last COMP_WORDBREAKS character, such as
# the ':' of a derived `cmd:...` key), and backslash-escaped unless the word opened a quote.
_idem_add() {
  local word
  for word in "$@"; do
    word=$_idem_pre$word
    [[ $word == "$_idem_match"* ]] || continue
    word=${word:${#_idem_trim}}
    [[ -n $_idem_quote || -z $word ]] || printf -v word '%q' "$word"
    COMPREPLY+=("$word")
  done
}

# _idem_add_keys: the store's keys, from the same idem and the --db of the command line; only
# those starting with what was typed (an index range in the store: instant on any store size).
_idem_add_keys() {
  local -a db=() keys=() prefix=()
  local key typed=${_idem_match#"$_idem_pre"}
  [[ -n $_idem_db ]] && db=(--db "$_idem_db")
  [[ -n $_idem_store ]] && db+=(--store "$_idem_store")
  [[ -n $typed ]] && prefix=(--prefix "$typed")
  while IFS= read -r key; do
    keys+=("$key")
  done < <("$_idem_cmd" "${db[@]}" ls --all --keys "${prefix[@]}" 2>/dev/null)
  _idem_add "${keys[@]}"
}

# _idem_add_patterns: the patterns of the store's expectations (the first field of each line of
# `idem expect --list`), from the same idem and the --db of the command line.
_idem_add_patterns() {
  local -a db=() patterns=()
  local line
  [[ -n $_idem_db ]] && db=(--db "$_idem_db")
  [[ -n $_idem_store ]] && db+=(--store "$_idem_store")
  while IFS= read -r line; do
    patterns+=("${line%%  *}")
  done < <("$_idem_cmd" "${db[@]}" expect --list 2>/dev/null)
  _idem_add "${patterns[@]}"
}

# _idem_add_zones: the zone names of the zoneinfo folder ($TZDIR, else /usr/share/zoneinfo), as
# `idem expect --tz` loads them: its files and links but the posix/ and right/ copies and the
# tables (zone names start with a capital letter).
_idem_add_zones() {
  local dir=${TZDIR:-/usr/share/zoneinfo} zone
  local -a zones=()
  [[ -d $dir ]] || return 0
  while IFS= read -r zone; do
    zones+=("${zone#./}")
  done < <(cd "$dir" && find . \( -path ./posix -o -path ./right \) -prune -o \
    \( -type f -o -type l \) -name '[A-Z]*' -print 2>/dev/null)
  _idem_add "${zones[@]}"
}

# _idem_add_files: file names for the value being typed (after any --flag=).
_idem_add_files() {
  local value=${_idem_match#"$_idem_pre"}
  if declare -F _filedir >/dev/null; then
    local cur=$value
    _filedir
  else
    compopt -o filenames 2>/dev/null
    mapfile -t -O "${#COMPREPLY[@]}" COMPREPLY < <(compgen -f -- "$value")
  fi
}

_idem() {
  COMPREPLY=()
  local -a words=()
  local cword=$COMP_CWORD i

  # Put back together what COMP_WORDBREAKS split apart (--db=PATH, keys holding ':' such as the
  # derived `cmd:...` ones): a word that directly follows the previous one on the line joins it.
  words=("${COMP_WORDS[@]}")
  if [[ -n ${COMP_LINE-} && -n ${COMP_POINT-} ]]; then
    local line=${COMP_LINE:0:COMP_POINT} pos=0 glued w
    local -a joined=()
    for ((i = 0; i <= COMP_CWORD && i < ${#COMP_WORDS[@]}; i++)); do
      w=${COMP_WORDS[i]}
      glued=1
      while [[ ${line:pos:1} == [[:space:]] ]]; do
        ((pos++)) || true
        glued=0
      done
      if ((i > 0 && glued)); then
        joined[${#joined[@]} - 1]+=$w
      else
        joined+=("$w")
      fi
      ((pos += ${#w})) || true
    done
    if ((${#joined[@]} > 0)); then
      words=("${joined[@]}")
      cword=$((${#joined[@]} - 1))
    fi
  fi

  local cur=${words[cword]-}
  _idem_cmd=${words[0]:-idem}
  [[ $_idem_cmd == \~/* ]] && _idem_cmd=$HOME/${_idem_cmd#\~/}
  _idem_db=
  _idem_store=
  _idem_pre=

  # The subcommand, the --db in force, where `--` is, and how many positionals precede cur.
  local sub='' dashdash=0 npos=0 word
  for ((i = 1; i < cword; i++)); do
    word=${words[i]}
    case $word in
      --db) _idem_db=${words[i + 1]-}; ((i++)) || true; continue ;;
      --db=*) _idem_db=${word#--db=}; continue ;;
      --store) _idem_store=${words[i + 1]-}; ((i++)) || true; continue ;;
      --store=*) _idem_store=${word#--store=}; continue ;;
      --) [[ -n $sub ]] && { dashdash=$i; break; } ;;
    esac
    if [[ -z $sub ]]; then
      [[ $word == -* ]] || sub=$word
    elif [[ $word == -*=* ]]; then
      :
    elif [[ $word == -* ]]; then
      if _idem_takes_value "$sub" "$word"; then ((i++)) || true; fi
    elif [[ $sub == run || $sub == each ]]; then
      # idem's options end at the command's first word: it and what follows are the command's.
      dashdash=$((i - 1))
      break
    else
      ((npos++)) || true
    fi
  done
  local prev=
  ((cword > 0)) && prev=${words[cword - 1]}

  # After `--` of run and each, or after their command's first word: the command to run, then its
  # own arguments.
  if ((dashdash)); then
    if declare -F _command_offset >/dev/null; then
      _command_offset $((dashdash + 1))
    elif ((cword == dashdash + 1)); then
      mapfile -t COMPREPLY < <(compgen -c -- "$cur")
    else
      compopt -o filenames 2>/dev/null
      mapfile -t COMPREPLY < <(compgen -f -- "$cur")
    fi
    return 0
  fi

  # What was typed, unquoted and unescaped, to compare with the candidates; and the part of it
  # that readline keeps (everything up to its last word-break character).
  _idem_quote=
  _idem_match=$cur
  case $cur in
    \'* | \"*) _idem_quote=${cur:0:1} _idem_match=${cur:1} ;;
    *) _idem_match=${cur//\\/} ;;
  esac
  _idem_trim=
  if [[ -z $_idem_quote ]]; then
    local c n=0 keep=0
    for ((i = 0; i < ${#cur}; i++)); do
      c=${cur:i:1}
      if [[ $c == \\ ]]; then
        ((i++, n++)) || true  # an escaped character never breaks the word
        continue
      fi
      ((n++)) || true
      [[ $c != [[:space:]] && ${COMP_WORDBREAKS-} == *"$c"* ]] && keep=$n
    done
    _idem_trim=${_idem_match:0:keep}
  fi

  # --flag=VALUE completes VALUE as if it were the next word.
  if [[ $_idem_match == --*=* ]]; then
    prev=${_idem_match%%=*}
    _idem_pre=$prev=
  fi

  # The value of the previous flag.
  if _idem_takes_value "$sub" "$prev"; then
    case $sub:$prev in
      *:--db | *:--store | serve:--config | serve:--socket | serve:--port-file | end:--stdout-file | \
        end:--stderr-file | serve:--cert | serve:--key | serve:--pidfile | serve:--hooks | \
        doctor:--config | doctor:--hooks)
        _idem_add_files ;;
      serve:--tls-min-version) _idem_add 1.2 1.3 ;;
      expect:--tz) _idem_add_zones ;;
      expect:--cron) _idem_add @hourly @daily @weekly @monthly @yearly ;;
      run:-k | run:--key | begin:-k | begin:--key | end:-k | end:--key) _idem_add_keys ;;
      ls:--status | export:--status) _idem_add running succeeded failed abandoned queued superseded expired ;;
      serve:--listen) _idem_add 127.0.0.1:8787 127.0.0.1:0 ;;
      begin:--owner-pid | end:--owner-pid)
        local -a pids=()
        local p
        for p in /proc/[0-9]*; do pids+=("${p#/proc/}"); done
        _idem_add "${pids[@]}"
        ;;
    esac
    return 0
  fi

  if [[ $_idem_match == -* ]]; then
    local -a flags
    read -ra flags <<<"$(_idem_flags "$sub")"
    _idem_add "${flags[@]}"
  elif [[ -z $sub ]]; then
    local -a subs=()
    local name
    while IFS=$'\t' read -r name _; do
      subs+=("$name")
    done < <("$_idem_cmd" --list-commands 2>/dev/null)
    _idem_add "${subs[@]}"
  else
    case $sub in
      show | status | log | tail) ((npos == 0)) && _idem_add_keys ;;
      rm) _idem_add_keys ;;
      run | each) _idem_add -- ;;  # the command comes after `--`
      import) ((npos == 0)) && _idem_add_files ;;
      expect) ((npos == 0)) && _idem_add_patterns ;;
    esac
  fi
  return 0
} &&
  complete -F _idem idem
