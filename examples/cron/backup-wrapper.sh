#!/bin/sh
# A nightly backup that runs at most once a day, however often cron fires it (see ./crontab).
#
#   BACKUP_CMD=/usr/local/bin/backup.sh ./backup-wrapper.sh
#
# - The key is dated, backup-YYYY-MM-DD: the first firing of the day runs the backup; later
#   firings replay its outcome. --quiet-replay makes a replay print nothing, so cron mails the
#   backup's output once, not once per firing; the exit code is still the backup's.
# - A failed backup is not replayed: the next firing tries again (IDEM_ATTEMPT counts the tries).
# - A firing while the backup still runs exits 75 at once and says nothing (-q).
# - If the machine or idem dies mid-backup, the outcome is unknown: the record is "abandoned",
#   and every later firing that day says so (cron mails it) and exits 69 until someone decides:
#   `idem rm backup-YYYY-MM-DD`, or one run with BACKUP_RETRY_ABANDONED=1.
#
# Environment:
#   BACKUP_CMD              the backup, a shell command (default: /usr/local/bin/backup.sh)
#   BACKUP_DAY              the day the key is for (default: today, `date +%F`)
#   BACKUP_RETRY_ABANDONED  1: run again after an abandoned attempt
#   IDEM_DB                 idem's store (default: ~/.local/state/idem/idem.db)
# Secrets the backup needs (RESTIC_PASSWORD, AWS_SECRET_ACCESS_KEY, ...) belong in the
# environment too: idem passes it to the command untouched and stores only the command line,
# which `idem show --request` prints. Never put a secret in BACKUP_CMD.
set -eu

day=${BACKUP_DAY:-$(date +%F)}
key=backup-$day
retry=
[ "${BACKUP_RETRY_ABANDONED:-}" != 1 ] || retry=--retry-abandoned

# --ttl 2d: the day's record outlives the day. --timeout: a hung backup is stopped (and retried
# at the next firing) rather than blocking every later firing with 75.
rc=0
idem run -q --quiet-replay -k "$key" --ttl 2d --timeout 6h $retry \
  -- sh -c "${BACKUP_CMD:-/usr/local/bin/backup.sh}" || rc=$?

# -q silenced only 75: idem printed its line for a conflict (65) or an abandoned day (69), which
# cron mails. For the latter, add this wrapper's way out (`idem status` tells idem's 69 from a
# backup that itself exited 69).
if [ "$rc" = 69 ] && [ "$(idem status "$key")" = abandoned ]; then
  echo "backup-wrapper: the backup of $day was interrupted mid-run (idem or the machine died);" \
    "its outcome is unknown. Check it, then run 'idem rm $key' or set BACKUP_RETRY_ABANDONED=1" >&2
fi
exit "$rc"
