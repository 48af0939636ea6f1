#!/bin/sh
# Render deploy/nginx.conf.template into NGINX_PREFIX and run nginx there in the foreground.
#   NGINX_PORT    where clients (or the load balancer) connect           (default 8000)
#   WEB_BIND      gunicorn's --bind: host:port or unix:/path             (default 127.0.0.1:8001)
#   NGINX_PREFIX  nginx's folder: rendered config, pid, temporary files  (default var/nginx)
#   NGINX_USER    the user of nginx's workers when started as root       (default: who runs this)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
: "${NGINX_PORT:=8000}" "${WEB_BIND:=127.0.0.1:8001}" "${NGINX_USER:=$(id -un)}"
: "${NGINX_PREFIX:=${VAR_DIR:-$here/../var}/nginx}"
export NGINX_PORT WEB_BIND NGINX_USER
mkdir -p "$NGINX_PREFIX"
envsubst '${NGINX_PORT} ${WEB_BIND} ${NGINX_USER}' \
    <"$here/nginx.conf.template" >"$NGINX_PREFIX/nginx.conf"
# nginx killed outright (SIGKILL, a crash) leaves its workers running without it, holding the
# port, so the nginx started again (deploy/start.sh's supervisord does) could not bind it. They
# are the process group of the dead master (it led one: supervisord starts each program in its
# own): they are told to quit gracefully, which closes their listening sockets at once (nginx
# retries its bind for 2 s) and lets them finish the requests they were answering.
old=$(cat "$NGINX_PREFIX/nginx.pid" 2>/dev/null || true)
if [ -n "$old" ] && ! kill -0 "$old" 2>/dev/null; then
    kill -QUIT "-$old" 2>/dev/null || true
fi
nginx=$(command -v nginx || echo /usr/sbin/nginx)
exec "$nginx" -p "$NGINX_PREFIX/" -c "$NGINX_PREFIX/nginx.conf" -e stderr -g 'daemon off;'
