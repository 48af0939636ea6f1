#!/bin/sh
# Start the production topology of deploy/Procfile in the foreground (Ctrl-C stops it all).
#   deploy/start.sh [ENV_FILE] [PROCESS ...]
# ENV_FILE defaults to deploy/production.env (copy deploy/production.env.example); naming
# processes starts only those (a worker host: deploy/start.sh deploy/production.env images).
# Before the first start and after each upgrade: deploy/release.sh ENV_FILE.
set -eu
cd "$(dirname "$0")/.."
env_file=${1:-deploy/production.env}
[ $# -gt 0 ] && shift
[ -r "$env_file" ] || { echo "No environment file $env_file (see deploy/production.env.example)" >&2; exit 2; }
venv=${VENV:-.venv}
case $venv in /*) ;; *) venv=$PWD/$venv ;; esac
PATH="$venv/bin:$PATH:/usr/sbin:/sbin"
export PATH
exec honcho --app-root . --env "$env_file" --procfile deploy/Procfile start "$@"
