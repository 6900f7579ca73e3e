#!/usr/bin/env bash
# What the test suite needs on this machine, made ready before it runs (`pnpm test` calls this
# first; so does CI, through the same command): PostgreSQL, Redis and NATS JetStream running on
# their standard loopback ports, Prometheus' promtool and server and Debian's Chromium installed.
# Whatever is missing is started, or installed from Debian's packages; what cannot be is named and
# the run stops here, before any test, rather than failing tests one by one later.
set -euo pipefail

need_root() {
  [[ $(id -u) == 0 ]] && return 0
  echo "provision: $1 is missing and installing it needs root (apt-get); install it, or run as root" >&2
  exit 1
}

port_open() { (echo >"/dev/tcp/127.0.0.1/$1") >/dev/null 2>&1; }

wait_port() {
  for _ in $(seq 1 50); do port_open "$1" && return 0; sleep 0.2; done
  return 1
}

ensure_redis() {
  port_open 6379 && return 0
  echo "provision: Redis is not running on 127.0.0.1:6379; starting it"
  command -v redis-server >/dev/null || { need_root redis-server; apt-get update -qq && apt-get install -y -qq redis-server >/dev/null; }
  mkdir -p /var/lib/redis /var/log/redis
  redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
    --dir /var/lib/redis --logfile /var/log/redis/ci.log
  wait_port 6379 || { echo "provision: FAILED to start Redis" >&2; exit 1; }
}

ensure_nats() {
  port_open 4222 && return 0
  echo "provision: NATS is not running on 127.0.0.1:4222; starting it with JetStream"
  command -v nats-server >/dev/null || [[ -x /usr/sbin/nats-server ]] ||
    { need_root nats-server; apt-get update -qq && apt-get install -y -qq nats-server >/dev/null; }
  local bin; bin=$(command -v nats-server || echo /usr/sbin/nats-server)
  mkdir -p /var/lib/nats-server
  start-stop-daemon --start --oknodo --background --exec "$bin" -- \
    -a 127.0.0.1 -p 4222 -js -sd /var/lib/nats-server -l /var/log/nats-server.log
  wait_port 4222 || { echo "provision: FAILED to start NATS" >&2; exit 1; }
}

ensure_prometheus() {
  command -v promtool >/dev/null && command -v prometheus >/dev/null && return 0
  need_root "Prometheus (promtool and the server)"
  echo "provision: installing Prometheus (promtool and the server) from Debian's package"
  # The package would start its own server on :9090; the tests run theirs on free ports, so
  # keep service starts off while it installs.
  local policy=/usr/sbin/policy-rc.d added=""
  if [[ ! -e $policy ]]; then
    printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy" && added=1
  fi
  local ok=1
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >/dev/null; } || ok=""
  if [[ -n $added ]]; then rm -f "$policy"; fi
  [[ -n $ok ]] || { echo "provision: FAILED to install Prometheus (apt-get)" >&2; exit 1; }
  command -v promtool >/dev/null && command -v prometheus >/dev/null ||
    { echo "provision: FAILED to install Prometheus" >&2; exit 1; }
}

ensure_chromium() {
  [[ -x /usr/bin/chromium ]] && return 0
  need_root Chromium
  echo "provision: installing Chromium from Debian's package (the dashboard's browser test drives it)"
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null; } ||
    { echo "provision: FAILED to install Chromium (apt-get)" >&2; exit 1; }
  [[ -x /usr/bin/chromium ]] || { echo "provision: FAILED to install Chromium" >&2; exit 1; }
}

ensure_postgres() {
  port_open 5432 && return 0
  echo "provision: PostgreSQL is not running on 127.0.0.1:5432; starting it"
  if ! ls /etc/postgresql/*/main >/dev/null 2>&1; then
    need_root PostgreSQL
    apt-get update -qq && apt-get install -y -qq postgresql >/dev/null
    # Tests connect as postgres over 127.0.0.1 without a password, as on the machines.
    local hba; hba=$(ls /etc/postgresql/*/main/pg_hba.conf | head -1)
    printf 'local all all trust\nhost all all 127.0.0.1/32 trust\n' >"$hba"
  fi
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -1)" main start || true
  wait_port 5432 || { echo "provision: FAILED to start PostgreSQL" >&2; exit 1; }
}

ensure_postgres
ensure_redis
ensure_nats
ensure_prometheus
ensure_chromium
