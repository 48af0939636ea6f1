#!/bin/sh
# Run the production topology under supervisord, in the foreground (docs/deployment.md).
#   deploy/start.sh [ENV_FILE] [PROGRAM ...]
# ENV_FILE defaults to deploy/production.env (copy deploy/production.env.example); naming
# programs of deploy/programs/ starts only those (a worker host: deploy/start.sh
# deploy/production.env images). supervisord restarts any process that exits, never stops the
# others for it, and gives up on one that keeps failing to start (FATAL); SIGTERM or Ctrl-C
# stops them all, gracefully. deploy/ctl.sh ENV_FILE status shows them.
# Before the first start and after each upgrade: deploy/release.sh ENV_FILE.
set -eu
cd "$(dirname "$0")/.."
env_file=${1:-deploy/production.env}
[ $# -gt 0 ] && shift
[ -r "$env_file" ] || { echo "No environment file $env_file (see deploy/production.env.example)" >&2; exit 2; }
venv=${VENV:-.venv}
case $venv in /*) ;; *) venv=$PWD/$venv ;; esac
PATH="$venv/bin:$PATH:/usr/sbin:/sbin"
programs=
for name in "$@"; do
    [ -r "deploy/programs/$name.conf" ] || {
        echo "No program $name; the programs: $(cd deploy/programs && echo *.conf | sed 's/\.conf//g')" >&2
        exit 2
    }
    programs="$programs programs/$name.conf"
done
SUPERVISOR_PROGRAMS=${programs:-programs/*.conf}
export PATH SUPERVISOR_PROGRAMS
exec python deploy/with_env.py "$env_file" supervisord --nodaemon --configuration deploy/supervisord.conf
