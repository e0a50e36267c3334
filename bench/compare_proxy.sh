# shellcheck shell=bash
# The proxy rows of bench/compare.sh: bench/proxy_compare.sh (idem serve --upstream beside
# express-idempotency, replays and new keys) run as it is, on the same binary and sizes, its
# table's rows taken into compare.sh's.

trim() { local s=$1; s=${s#"${s%%[! ]*}"}; echo "${s%"${s##*[! ]}"}"; }

bench_proxy() {
  echo "== proxy: idem serve --upstream vs express-idempotency (bench/proxy_compare.sh)"
  local out=$dir/proxy.out rc=0 measure idem_cell peer ratio_cell goal ok
  QUICK=$quick ROUNDS=$rounds WRK_SECONDS=$wrk_s "$root/bench/proxy_compare.sh" "$idem" >"$out" 2>&1 || rc=$?
  grep -E '^(== |  round |  => )' "$out" | sed 's/^/  /' || true
  ((rc == 0)) || { tail -20 "$out"; echo "FAIL: bench/proxy_compare.sh (exit $rc)"; exit 1; }
  while IFS='|' read -r _ measure idem_cell peer ratio_cell goal ok _; do
    measure=$(trim "$measure") idem_cell=$(trim "$idem_cell") peer=$(trim "$peer")
    ratio_cell=$(trim "$ratio_cell") goal=$(trim "$goal") ok=$(trim "$ok")
    [[ $measure == replays* || $measure == "new keys"* ]] || continue
    # New keys: the goal of durable group commit (every claim and answer durable) is 1.5x.
    if [[ $measure == "new keys"* ]]; then goal="≥ 1.5× express" ok=$(met "${ratio_cell%%×*}" '>=' 1.5); fi
    row "proxy (\`serve --upstream\`), $measure" "$idem_cell" "express-idempotency $peer" \
      "$ratio_cell" "$goal" "$ok"
  done < <(grep '^| ' "$out")
}
