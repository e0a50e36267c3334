# fish completion for idem(1): subcommands (from `idem --list-commands`), their flags and values,
# record keys (show, status, log, tail, rm, and -k/--key of run, begin and end) read from the
# store with `idem ls --all --keys`, and the patterns of `idem expect` (`idem expect --list`),
# honouring a --db given on the command line.

# The subcommand of the command line being completed (the first word that is no option and no
# value of --db), or nothing.
function __idem_subcommand
    set -l tokens (commandline -opc)
    set tokens $tokens[2..-1]
    while set -q tokens[1]
        switch $tokens[1]
            case --db --store
                set tokens $tokens[3..-1]
                continue
            case '-*'
            case '*'
                echo $tokens[1]
                return 0
        end
        set tokens $tokens[2..-1]
    end
    return 1
end

# Where the command run begins among the words after the subcommand (1-based): after a `--`,
# or (run, each) at the command's first word, where idem's options end. Fails before it.
function __idem_command_at
    set -l sub (__idem_subcommand); or return 1
    set -l tokens (commandline -opc)
    set -l at (contains -i -- $sub $tokens); or return 1
    set tokens $tokens[(math $at + 1)..-1]
    set -l i 1
    while test $i -le (count $tokens)
        switch $tokens[$i]
            case --
                math $i + 1
                return 0
            case -k --key --ttl --wait --serial --serial-wait --timeout --kill-after --lease --max-output --key-field --jobs --db --store --on-failure --on-change --notify-timeout
                set i (math $i + 1)
            case '-*'
            case '*'
                if contains -- $sub run each
                    echo $i
                    return 0
                end
        end
        set i (math $i + 1)
    end
    return 1
end

# True once the command run and its arguments are being typed.
function __idem_after_dashdash
    __idem_command_at >/dev/null
end

# __idem_using SUBCOMMAND...: the subcommand is one of these, and no `--` has been given yet.
function __idem_using
    set -l sub (__idem_subcommand); or return 1
    contains -- $sub $argv; or return 1
    not __idem_after_dashdash
end

# How many positionals (keys, patterns) follow the subcommand so far.
function __idem_positionals
    set -l sub (__idem_subcommand); or return 1
    set -l tokens (commandline -opc)
    set -l at (contains -i -- $sub $tokens)
    set tokens $tokens[(math $at + 1)..-1]
    set -l n 0
    while set -q tokens[1]
        switch $tokens[1]
            case --db --store --every --cron --tz --grace --max-runtime --at-most
                set tokens $tokens[2..-1]
            case '-*'
            case '*'
                set n (math $n + 1)
        end
        set tokens $tokens[2..-1]
    end
    echo $n
end

# True after any subcommand, until a `--`.
function __idem_in_subcommand
    __idem_subcommand >/dev/null; or return 1
    not __idem_after_dashdash
end

# The subcommands, each with its purpose after a tab, asked of the idem being completed.
function __idem_commands
    set -l tokens (commandline -opc)
    $tokens[1] --list-commands 2>/dev/null
end

# The store options of the command line (--db, --store), to ask the same store.
function __idem_store_args
    set -l tokens (commandline -opc)
    set -l i 2
    while test $i -le (count $tokens)
        switch $tokens[$i]
            case --db --store
                set i (math $i + 1)
                echo $tokens[(math $i - 1)]
                echo $tokens[$i]
            case '--db=*' '--store=*'
                echo $tokens[$i]
        end
        set i (math $i + 1)
    end
end

# The store's keys, from the same idem and the --db of the command line.
function __idem_keys
    set -l tokens (commandline -opc)
    $tokens[1] (__idem_store_args) ls --all --keys 2>/dev/null
end

# The same store's expectation patterns: the first field of each line of `idem expect --list`.
function __idem_patterns
    set -l tokens (commandline -opc)
    $tokens[1] (__idem_store_args) expect --list 2>/dev/null | string replace -r '  .*' ''
end

# The zone names of the zoneinfo folder ($TZDIR, else /usr/share/zoneinfo), as `idem expect
# --tz` loads them: its files and links but the posix/ and right/ copies and the tables.
function __idem_zones
    set -l dir /usr/share/zoneinfo
    set -q TZDIR; and test -n "$TZDIR"; and set dir $TZDIR
    test -d $dir; or return 0
    pushd $dir
    find . \( -path ./posix -o -path ./right \) -prune -o \( -type f -o -type l \) -name '[A-Z]*' -print 2>/dev/null | string replace -r '^\./' ''
    popd
end

# What the command after `--` of run and each would complete.
function __idem_complete_command
    set -l sub (__idem_subcommand)
    set -l tokens (commandline -opc)
    set -l at (contains -i -- $sub $tokens)
    set -l rest $tokens[(math $at + 1)..-1]
    set rest $rest[(__idem_command_at)..-1]
    complete -C (string join ' ' -- (string escape -- $rest) (commandline -ct))
end

complete -c idem -f

# Before a subcommand.
complete -c idem -n "not __idem_subcommand" -l store -r -F -d 'Store URL (sqlite:PATH, a path, or postgres://...)'
complete -c idem -n "not __idem_subcommand" -l db -r -F -d 'SQLite store'
complete -c idem -n "not __idem_subcommand" -s h -l help -d 'Print help and exit'
complete -c idem -n "not __idem_subcommand" -l version -d 'Print the version and exit'
complete -c idem -n "not __idem_subcommand" -a '(__idem_commands)'

# Accepted after any subcommand.
complete -c idem -n "__idem_in_subcommand" -l store -r -F -d 'Store URL (sqlite:PATH, a path, or postgres://...)'
complete -c idem -n "__idem_in_subcommand" -l db -r -F -d 'SQLite store'
complete -c idem -n "__idem_in_subcommand" -s h -l help -d 'Print help and exit'

# run
complete -c idem -n "__idem_using run" -s k -l key -x -a '(__idem_keys)' -d 'Idempotency key'
complete -c idem -n "__idem_using run" -l ttl -x -d 'How long a finished outcome is replayed (24h)'
complete -c idem -n "__idem_using run" -l lease -x -d 'PostgreSQL: how long the claim holds the key unrenewed (30s)'
complete -c idem -n "__idem_using run" -l wait -x -d 'Wait up to DURATION for a running key'
complete -c idem -n "__idem_using run" -l serial -x -d 'Run one at a time with the other runs of GROUP, in arrival order'
complete -c idem -n "__idem_using run" -l serial-wait -x -d 'With --serial, wait at most DURATION for the turn; exit 75'
complete -c idem -n "__idem_using run" -l timeout -x -d 'Stop the command after DURATION; exit 124'
complete -c idem -n "__idem_using run" -l kill-after -x -d 'Grace between TERM and KILL (10s)'
complete -c idem -n "__idem_using run" -l drain -x -d 'After the command exits, read late output this long at most (5s)'
complete -c idem -n "__idem_using run" -l replay-failures -d 'A failed outcome is final and replayed, to later attempts too'
complete -c idem -n "__idem_using run" -l retry-abandoned -d 'Run again after an owner died mid-run'
complete -c idem -n "__idem_using run" -l kill-stale -d 'End what a failed attempt, or with --retry-abandoned an abandoned one, left running'
complete -c idem -n "__idem_using run" -l hash-stdin -d 'Add stdin to the fingerprint'
complete -c idem -n "__idem_using run" -l max-output -x -d 'Stored output cap per record (16MiB)'
complete -c idem -n "__idem_using run" -l pty -d 'Give the command a pseudo-terminal for stdout and stderr'
complete -c idem -n "__idem_using run" -l on-failure -x -d 'Shell command run when the attempt fails or is abandoned'
complete -c idem -n "__idem_using run" -l on-change -x -d 'As --on-failure, and when the key recovers'
complete -c idem -n "__idem_using run" -l notify-timeout -x -d 'Stop the notify command after DURATION (30s)'
complete -c idem -n "__idem_using run" -l quiet-replay -d 'On replay write nothing'
complete -c idem -n "__idem_using run" -s q -l quiet -d 'No refusal message for 65, 69 and 75'
complete -c idem -n "__idem_using run" -s v -l verbose -d 'Say when a replay or a wait happens'
complete -c idem -n "__idem_using run each" -a -- -d 'The command follows'
complete -c idem -n "__idem_after_dashdash" -x -a '(__idem_complete_command)'

# ls
complete -c idem -n "__idem_using ls" -l status -x -a 'running succeeded failed abandoned queued superseded expired' -d 'Only records in this status'
complete -c idem -n "__idem_using ls" -l prefix -x -d 'Only keys starting with PREFIX'
complete -c idem -n "__idem_using ls" -l front -x -a 'run each begin hook proxy ledger' -d 'Only records made by this front'
complete -c idem -n "__idem_using ls" -l since -x -d 'Only records started at or after WHEN (1h, RFC 3339)'
complete -c idem -n "__idem_using ls" -l until -x -d 'Only records started before WHEN (1h, RFC 3339)'
complete -c idem -n "__idem_using ls" -l limit -x -d 'At most N records'
complete -c idem -n "__idem_using ls" -l all -d 'Include expired records'
complete -c idem -n "__idem_using ls" -l json -d 'JSON Lines with ISO-8601 UTC times'
complete -c idem -n "__idem_using ls" -l keys -d 'Only the keys, one per line'

# show, status, log, tail, rm
complete -c idem -n "__idem_using show" -l json -d 'One JSON object, output as base64'
complete -c idem -n "__idem_using show" -l stdout -d 'Write the captured stdout bytes raw'
complete -c idem -n "__idem_using show" -l stderr -d 'Write the captured stderr bytes raw'
complete -c idem -n "__idem_using show" -l request -d 'Print what was asked as JSON'
complete -c idem -n "__idem_using show" -l attempts -x -a 'all' -d 'How many of the newest attempts to list (20)'
complete -c idem -n "__idem_using log" -l json -d 'One JSON object: the key, its replays and its attempts'
complete -c idem -n "__idem_using tail" -s f -l follow -d 'Follow the attempt until it ends, then exit with its exit code'
complete -c idem -n "__idem_using show status log tail; and test (__idem_positionals) -eq 0" -a '(__idem_keys)' -d 'Record key'
complete -c idem -n "__idem_using rm" -l force -d 'Also delete a record whose owner still runs'
complete -c idem -n "__idem_using rm" -a '(__idem_keys)' -d 'Record key'

# gc
complete -c idem -n "__idem_using gc" -l dry-run -d 'Count what would be deleted, delete nothing'
complete -c idem -n "__idem_using gc" -l older-than -x -d 'Also delete records older than DURATION'

# expect, check
complete -c idem -n "__idem_using expect" -l every -x -d 'A real attempt is due DURATION after the last one'
complete -c idem -n "__idem_using expect" -l cron -x -a '@hourly @daily @weekly @monthly @yearly' -d 'Due at the times of a crontab line (five fields)'
complete -c idem -n "__idem_using expect" -l tz -x -a '(__idem_zones)' -d 'The time zone --cron reads its times in (the system\'s)'
complete -c idem -n "__idem_using expect" -l grace -x -d 'How long after a due time its attempt may start (1m)'
complete -c idem -n "__idem_using expect" -l max-runtime -x -d 'An attempt running longer is an overrun'
complete -c idem -n "__idem_using expect" -l at-most -x -d 'More real attempts than N in one period are too often'
complete -c idem -n "__idem_using expect" -l list -d 'List the expectations, with last and next runs'
complete -c idem -n "__idem_using expect" -l rm -d 'Remove the expectation of PATTERN and its findings'
complete -c idem -n "__idem_using expect" -l json -d 'With --list: one JSON object per line'
complete -c idem -n "__idem_using expect; and test (__idem_positionals) -eq 0" -a '(__idem_patterns)' -d 'Expectation pattern'
complete -c idem -n "__idem_using check" -l json -d 'One JSON object per finding, a line each'

# export, import
complete -c idem -n "__idem_using export" -l status -x -a 'running succeeded failed abandoned queued superseded expired' -d 'Only records in STATUS'
complete -c idem -n "__idem_using export" -l prefix -x -d 'Only keys starting with PREFIX'
complete -c idem -n "__idem_using export" -l limit -x -d 'At most N records'
complete -c idem -n "__idem_using export" -l all -d 'Include expired records'
complete -c idem -n "__idem_using import" -l replace -d 'Overwrite a key that holds another record'
complete -c idem -n "__idem_using import" -F -d 'Export file'

# doctor
complete -c idem -n "__idem_using doctor" -l json -d 'Print one JSON object: facts and findings'
complete -c idem -n "__idem_using doctor" -l config -r -F -d 'Also check this idem serve config'
complete -c idem -n "__idem_using doctor" -l hooks -r -F -d 'Also check this webhook hooks file'
complete -c idem -n "__idem_using doctor" -l template -d 'Expand the hooks files as templates first'

# serve
complete -c idem -n "__idem_using serve" -l config -r -F -d 'JSON file listing the hooks and the proxy'
complete -c idem -n "__idem_using serve" -l upstream -x -a 'http://127.0.0.1:3000' -d 'Idempotency-Key proxy: forward to URL'
complete -c idem -n "__idem_using serve" -l hooks -r -F -d 'Serve the hooks of a webhook hooks file'
complete -c idem -n "__idem_using serve" -l urlprefix -x -d 'Prefix of the hooks files\' hooks (hooks)'
complete -c idem -n "__idem_using serve" -l template -d 'Expand the hooks files as templates first'
complete -c idem -n "__idem_using serve" -l response-header -x -d 'A header on every answer of the hooks files\' hooks'
complete -c idem -n "__idem_using serve" -l http-methods -x -d 'Methods of hooks that name none (any)'
complete -c idem -n "__idem_using serve" -l ledger -d 'Serve the ledger API behind the token file'
complete -c idem -n "__idem_using serve" -l ui -d 'Serve the delivery-log page at /ui/ on a listener of its own'
complete -c idem -n "__idem_using serve" -l ui-listen -r -d 'The delivery-log page'"'"'s own address (HOST:PORT)'
complete -c idem -n "__idem_using serve" -l socket -r -F -d 'Also serve the ledger API on a Unix socket'
complete -c idem -n "__idem_using serve" -l listen -x -a '127.0.0.1:8787 127.0.0.1:0' -d 'Address to listen on'
complete -c idem -n "__idem_using serve" -l allow-remote -d 'Allow a non-loopback --listen address'
complete -c idem -n "__idem_using serve" -l port-file -r -F -d 'Write the bound port to FILE'
complete -c idem -n "__idem_using serve" -l max-connections -x -d 'Connections served at once (64)'
complete -c idem -n "__idem_using serve" -l request-timeout -x -d 'Deadline for a whole request (10s)'
complete -c idem -n "__idem_using serve" -l grace -x -d 'On SIGTERM, time for in-flight handlers (30s)'
complete -c idem -n "__idem_using serve" -l busy-timeout -x -d 'Wait for a locked store before 503 (3s)'
complete -c idem -n "__idem_using serve" -l keep-attempts -x -d 'Attempts of a key its history keeps (100)'
complete -c idem -n "__idem_using serve" -l lease -x -d 'PostgreSQL: how long a claim holds its key unrenewed (30s)'
complete -c idem -n "__idem_using serve" -l cert -r -F -d 'Serve HTTPS: the certificate chain, PEM'
complete -c idem -n "__idem_using serve" -l key -r -F -d 'The private key of --cert, PEM'
complete -c idem -n "__idem_using serve" -l tls-min-version -x -a '1.2 1.3' -d 'The lowest TLS version accepted (1.2)'
complete -c idem -n "__idem_using serve" -l pidfile -r -F -d 'Write the daemon pid to PATH once listening'

# each
complete -c idem -n "__idem_using each" -l key-field -x -d 'JSON Pointer to each message key, e.g. /id'
complete -c idem -n "__idem_using each" -l ttl -x -d 'How long a handled key stays done (24h)'
complete -c idem -n "__idem_using each" -l jobs -x -d 'Handlers running at once (1)'
complete -c idem -n "__idem_using each" -l lease -x -d 'PostgreSQL: how long a claim holds its key unrenewed (30s)'
complete -c idem -n "__idem_using each" -l timeout -x -d 'Stop a handler after DURATION'
complete -c idem -n "__idem_using each" -l kill-after -x -d 'Grace between TERM and KILL for --timeout (10s)'
complete -c idem -n "__idem_using each" -l max-output -x -d 'Stored output cap per message (16MiB)'
complete -c idem -n "__idem_using each" -l replay-failures -d 'A failed message counts as done, for later runs too'
complete -c idem -n "__idem_using each" -l retry-abandoned -d 'Run again a message whose owner died mid-run'
complete -c idem -n "__idem_using each" -l on-failure -x -d 'Shell command run when a message fails or is abandoned'
complete -c idem -n "__idem_using each" -l on-change -x -d 'As --on-failure, and when a key recovers'
complete -c idem -n "__idem_using each" -l notify-timeout -x -d 'Stop the notify command after DURATION (30s)'
complete -c idem -n "__idem_using each" -s q -l quiet -d 'Report only malformed lines and the summary'
complete -c idem -n "__idem_using each" -s v -l verbose -d 'Also report every skipped message'

# begin
complete -c idem -n "__idem_using begin" -s k -l key -x -a '(__idem_keys)' -d 'Idempotency key'
complete -c idem -n "__idem_using begin" -l ttl -x -d 'How long a finished outcome counts as done (24h)'
complete -c idem -n "__idem_using begin" -l wait -x -d 'Wait up to DURATION for a running key'
complete -c idem -n "__idem_using begin" -l owner-pid -x -a '(__fish_complete_pids)' -d 'The process that owns the claim'
complete -c idem -n "__idem_using begin" -l fingerprint -x -d 'What the work is about: another STRING is a conflict'
complete -c idem -n "__idem_using begin" -l hash-stdin -d 'Add stdin SHA-256 to the fingerprint'
complete -c idem -n "__idem_using begin" -l print -d 'When already done, write the stored stdout'
complete -c idem -n "__idem_using begin" -l retry-abandoned -d 'Claim again after an owner died mid-run'
complete -c idem -n "__idem_using begin" -l kill-stale -d 'With --retry-abandoned: end what the dead owner left running'
complete -c idem -n "__idem_using begin" -s q -l quiet -d 'No refusal message for 65, 69 and 75'

# end
complete -c idem -n "__idem_using end" -s k -l key -x -a '(__idem_keys)' -d 'Idempotency key'
complete -c idem -n "__idem_using end" -l exit -x -d 'The outcome: 0 succeeded, else failed (0)'
complete -c idem -n "__idem_using end" -l stdout-file -r -F -d 'Store this file as the stdout'
complete -c idem -n "__idem_using end" -l stderr-file -r -F -d 'Store this file as the stderr'
complete -c idem -n "__idem_using end" -l owner-pid -x -a '(__fish_complete_pids)' -d 'The owner given to begin --owner-pid'
