#!/usr/bin/env bash
# ls at scale (issue 8): filters and the limit run in the store through an index and rows are
# streamed, so the first page of a large store costs what it costs on a small one (memory is the
# measure here: time varies too much on shared machines); --keys with a prefix, as completion
# asks, is an index range; --limit takes a count of records and nothing else.
tests_dir=${IDEM_TESTS_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
source "$tests_dir/cli/lib.sh"
source "$tests_dir/cli/store_lib.sh"

fill_store "$T/small.db" 1000
fill_store "$T/big.db" 200000

# Peak memory (KiB) of one listing.
rss_kib() { /usr/bin/time -f %M "$IDEM_BIN" "$@" 2>&1 >/dev/null | tail -n 1; }
[[ -x /usr/bin/time ]] || skip "needs GNU time"
for args in "ls --limit 20" "ls --json --limit 20" "ls --all --keys --limit 20" \
  "ls --status succeeded --limit 20" "ls --status abandoned --limit 20"; do
  small=$(rss_kib --db "$T/small.db" $args)
  big=$(rss_kib --db "$T/big.db" $args)
  echo "$args: peak RSS ${small} KiB on 1k records, ${big} KiB on 200k"
  # The table alone of 200k records is tens of MiB: 8 MiB of slack is page cache and allocator.
  ((big < small + 8192)) || fail "'$args' on 200k records takes ${big} KiB against ${small} KiB on 1k"
done

# The first page is the newest records, filters applied.
idem --db "$T/big.db" ls --limit 3 | awk 'NR > 1 { print $1, $2 }' >"$T/page"
assert_bytes "$T/page" 'rec-0199998 running\nrec-0199996 succeeded\nrec-0199994 succeeded\n'
idem --db "$T/big.db" ls --all --keys --limit 3 >"$T/keys"
assert_bytes "$T/keys" 'rec-0199999\nrec-0199998\nrec-0199997\n'
idem --db "$T/big.db" ls --status expired --keys --limit 2 >"$T/expired"
assert_bytes "$T/expired" 'rec-0199999\nrec-0199997\n'
idem --db "$T/big.db" ls --status running --keys --limit 2 >"$T/running"
assert_bytes "$T/running" 'rec-0199998\nrec-0199898\n'
# A prefix, rare or common, newest first.
idem --db "$T/big.db" ls --all --keys --prefix rec-000010 >"$T/prefix"
assert_bytes "$T/prefix" '%s\n' rec-00001{09..00}
assert_eq 100000 "$(idem --db "$T/big.db" ls --keys --prefix rec- | wc -l)" "live keys with a common prefix"
assert_eq rec-0199998 "$(idem --db "$T/big.db" ls --keys --prefix rec- --limit 1)" "newest with a common prefix"

# --limit: a count of records; 0 means all.
assert_eq 1000 "$(idem --db "$T/small.db" ls --all --keys --limit 0 | wc -l)" "--limit 0"
for bad in -1 abc 1.5 '' 99999999999999999999; do
  capture bad idem --db "$T/small.db" ls --limit "$bad"
  expect_rc 64
  assert_idem_error
  assert_bytes "$T/bad.err" "idem: bad --limit '%s': use a number of records, such as 20 (0 means no limit)\n" "$bad"
done
