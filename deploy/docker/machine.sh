#!/usr/bin/env bash
# Docker on a machine with no container registry, as the images test needs it (pnpm images,
# pnpm test:images). Three commands, each idempotent (what exists already is left as it is):
#
#   deploy/docker/machine.sh start   # Debian's docker.io installed if missing (root), dockerd started
#                                    # if no daemon answers (PID in $TOLLGATE_DOCKER_DIR/dockerd.pid)
#   deploy/docker/machine.sh base    # the base image $NODE_IMAGE made if missing: debootstrap
#                                    # minbase bookworm + the Node binary the workspace pins
#   deploy/docker/machine.sh stop    # stops dockerd, by PID, only if `start` started it
#
# With a reachable registry none of this is needed: set NODE_IMAGE=node:24-slim (or any image with
# node 24 on PATH) and the Dockerfile builds from it; `base` then does nothing.
# The daemon runs as the machine allows (shared/notes/docker-and-clusters.md): no bridge and no
# iptables (containers use --network host), vfs storage (no overlay on this filesystem).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
STATE=${TOLLGATE_DOCKER_DIR:-/var/lib/tollgate-docker}
# The client with built-in BuildKit (a newer /usr/local/bin/docker refuses it without buildx).
DOCKER=${DOCKER:-/usr/bin/docker}
NODE_IMAGE=${NODE_IMAGE:-tollgate/node-base:$(node -p 'require(process.argv[1]).devDependencies.node' "$ROOT/package.json")-bookworm}

need_root() {
  [[ $(id -u) == 0 ]] && return 0
  echo "docker: $1 is missing and installing it needs root (apt-get); install it, or run as root" >&2
  exit 1
}

apt_install() {
  need_root "$*"
  echo "docker: installing $* from Debian's packages"
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null; } ||
    { echo "docker: FAILED to install $* (apt-get)" >&2; exit 1; }
}

daemon_up() { "$DOCKER" info >/dev/null 2>&1; }

start() {
  [[ -x $DOCKER && -x /usr/sbin/dockerd ]] || apt_install docker.io
  daemon_up && return 0
  need_root dockerd
  mkdir -p "$STATE"
  echo "docker: starting dockerd (data in $STATE/data, log $STATE/dockerd.log)"
  dockerd --iptables=false --ip-masq=false --bridge=none --storage-driver=vfs \
    --data-root "$STATE/data" --pidfile "$STATE/dockerd.pid" >"$STATE/dockerd.log" 2>&1 &
  # Ours to stop: written only here, removed by stop.
  echo $! >"$STATE/started-by-us"
  for _ in $(seq 1 150); do daemon_up && return 0; sleep 0.2; done
  echo "docker: FAILED to start dockerd (see $STATE/dockerd.log)" >&2
  exit 1
}

stop() {
  [[ -f $STATE/started-by-us ]] || { echo "docker: dockerd was not started by this script; left running"; return 0; }
  local pid; pid=$(cat "$STATE/started-by-us")
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid"
    for _ in $(seq 1 150); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
  fi
  rm -f "$STATE/started-by-us"
}

base() {
  daemon_up || { echo "docker: no daemon answers; run '$0 start' first" >&2; exit 1; }
  if "$DOCKER" image inspect "$NODE_IMAGE" >/dev/null 2>&1; then return 0; fi
  if [[ $NODE_IMAGE != tollgate/node-base:* ]]; then
    echo "docker: NODE_IMAGE=$NODE_IMAGE is not present; pulling it"
    "$DOCKER" pull "$NODE_IMAGE"
    return 0
  fi
  command -v debootstrap >/dev/null || apt_install debootstrap
  local node_bin
  node_bin=$(node -e 'const v=require(process.argv[1]).devDependencies.node;
    console.log(require("path").join(process.argv[2],"node_modules/.pnpm/node@"+v+"/node_modules/node/bin/node"))' \
    "$ROOT/package.json" "$ROOT")
  [[ -x $node_bin ]] || { echo "docker: no Node binary at $node_bin (run the README's install first)" >&2; exit 1; }
  # The mirror this machine's apt uses (deb822 or one-line sources), else Debian's.
  local mirror
  mirror=$(grep -hoE '(URIs:|deb) +https?://[^ ]+/debian( |$)' /etc/apt/sources.list.d/* /etc/apt/sources.list 2>/dev/null |
    head -1 | awk '{print $2}' || true)
  mirror=${mirror:-http://deb.debian.org/debian}
  local rootfs; rootfs=$(mktemp -d "${TMPDIR:-/tmp}/tollgate-rootfs.XXXXXX")
  trap 'rm -rf "$rootfs"' RETURN
  echo "docker: making $NODE_IMAGE (debootstrap minbase bookworm from $mirror + $node_bin)"
  debootstrap --variant=minbase bookworm "$rootfs" "$mirror" >"$rootfs.log" 2>&1 ||
    { echo "docker: FAILED: debootstrap (log $rootfs.log)" >&2; exit 1; }
  rm -f "$rootfs.log"
  # Nothing the services need: apt's lists and caches, docs, man pages.
  rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/* "$rootfs"/usr/share/{doc,man,info}/*
  install -m 0755 "$node_bin" "$rootfs/usr/local/bin/node"
  # mktemp made the directory 0700: it becomes the image's /, which every user must traverse.
  chmod 0755 "$rootfs"
  tar -C "$rootfs" -c . | "$DOCKER" import \
    -c 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    -c 'CMD ["node"]' - "$NODE_IMAGE" >/dev/null
  "$DOCKER" run --rm --network host "$NODE_IMAGE" node --version >/dev/null
  echo "docker: $NODE_IMAGE ready"
}

case ${1:-} in
  start) start ;;
  stop) stop ;;
  base) base ;;
  image-name) echo "$NODE_IMAGE" ;;
  *) echo "usage: $0 start|base|stop|image-name" >&2; exit 2 ;;
esac
