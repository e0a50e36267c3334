#!/bin/sh
# Deploys one commit of a repository: the command of examples/webhook/hooks.yaml.
#
#   deploy.sh COMMIT PUSHER     (REPOSITORY in the environment)
#
# Environment:
#   REPOSITORY  owner/name of the repository pushed to (from the payload)
#   DEPLOY_CMD  replaces the deployment itself: a shell command with COMMIT, PUSHER and REPOSITORY
#               in its environment (default: `git -C /srv/$REPOSITORY checkout --detach $COMMIT`)
set -eu
if [ $# -ne 2 ] || [ -z "$1" ]; then
  echo "usage: deploy.sh COMMIT PUSHER" >&2
  exit 64
fi
COMMIT=$1 PUSHER=$2 REPOSITORY=${REPOSITORY:?REPOSITORY must name the repository}
export COMMIT PUSHER REPOSITORY
if [ -n "${DEPLOY_CMD:-}" ]; then
  sh -c "$DEPLOY_CMD"
else
  git -C "/srv/$REPOSITORY" checkout --quiet --detach "$COMMIT"
fi
echo "deployed $REPOSITORY at $COMMIT (pushed by $PUSHER)"
