#!/usr/bin/env bash
# The scenarios of test_serve_webhook_compat.sh with webhook/hooks.yaml (the same hooks as
# hooks.json, in YAML): idem answers as webhook does. And plain YAML scalars where a string is
# wanted (webhook/yaml-scalars.yaml), read as webhook's YAML 1.1 loader reads them.
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/serve_lib.sh"
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/webhook_compat_lib.sh"

hooks_file hooks.yaml hooks.yaml
start_webhook webhook "$T/hooks.yaml" -header X-Served-By=compat
run_scenarios webhook
stop_server webhook
start_idem idem "$T/hooks.yaml" --response-header X-Served-By=compat
run_scenarios idem
stop_server idem
compare_with idem webhook

hooks_file yaml-scalars.yaml yaml-scalars.yaml
start_webhook webhook-scalars "$T/yaml-scalars.yaml"
run_scenarios webhook-scalars yaml-scalars-scenarios.txt
stop_server webhook-scalars
start_idem idem-scalars "$T/yaml-scalars.yaml"
run_scenarios idem-scalars yaml-scalars-scenarios.txt
stop_server idem-scalars
compare_with idem-scalars webhook-scalars
