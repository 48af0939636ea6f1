#!/bin/sh
# What a deployment does once per release, before deploy/start.sh: migrate the database and
# collect the static files (served by the web processes through WhiteNoise).
#   deploy/release.sh [ENV_FILE]
set -eu
cd "$(dirname "$0")/.."
env_file=${1:-deploy/production.env}
[ -r "$env_file" ] || { echo "No environment file $env_file (see deploy/production.env.example)" >&2; exit 2; }
venv=${VENV:-.venv}
case $venv in /*) ;; *) venv=$PWD/$venv ;; esac
PATH="$venv/bin:$PATH"
export PATH
honcho --app-root . --env "$env_file" run python manage.py migrate --noinput
honcho --app-root . --env "$env_file" run python manage.py collectstatic --noinput --verbosity 0
honcho --app-root . --env "$env_file" run python manage.py check --deploy --fail-level WARNING
