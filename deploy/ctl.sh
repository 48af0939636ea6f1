#!/bin/sh
# supervisorctl for the topology deploy/start.sh runs with the same environment file.
#   deploy/ctl.sh ENV_FILE status                  every program: state, pid, uptime
#   deploy/ctl.sh ENV_FILE tail -f web             a program's log as it grows
#   deploy/ctl.sh ENV_FILE restart images          stop and start one program
#   deploy/ctl.sh ENV_FILE start web               again, after it was given up on (FATAL)
#   deploy/ctl.sh ENV_FILE shutdown                stop every program and supervisord
set -eu
cd "$(dirname "$0")/.."
[ $# -gt 0 ] || { echo "usage: deploy/ctl.sh ENV_FILE [supervisorctl command ...]" >&2; exit 2; }
env_file=$1
shift
[ -r "$env_file" ] || { echo "No environment file $env_file (see deploy/production.env.example)" >&2; exit 2; }
venv=${VENV:-.venv}
case $venv in /*) ;; *) venv=$PWD/$venv ;; esac
PATH="$venv/bin:$PATH"
export PATH
exec python deploy/with_env.py "$env_file" supervisorctl --configuration deploy/supervisord.conf "$@"
