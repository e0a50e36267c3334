#!/usr/bin/env bash
# `idem run` faults its heap in at its start, in one call (util::prefault_heap): in a process of
# its own, what it allocates after that takes (almost) no page fault, against one a page without.
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"

plain=$("$(helper heap_probe)")
ahead=$("$(helper heap_probe)" --prefault)
echo "faults allocating 96 blocks of 4000 bytes: $plain plain, $ahead with the heap faulted in ahead"
[[ $ahead != unsupported ]] || skip "this kernel cannot populate pages ahead (MADV_POPULATE_WRITE: Linux 5.14)"
# A page a fault: with transparent huge pages always on, the heap may come in larger pieces.
((plain >= 60)) || skip "the heap faults in larger pieces than pages here ($plain faults for 96 pages)"
((ahead <= 8)) || fail "with the heap faulted in ahead the probe still took $ahead faults"
