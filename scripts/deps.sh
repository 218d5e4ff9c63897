#!/usr/bin/env bash
# Installs what Strix needs that is missing: the Debian packages in deps/apt.txt and
# the npm packages pinned in package.json / package-lock.json. Idempotent: a second
# run installs nothing.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
while read -r pkg; do
  pkg="${pkg%%#*}"; pkg="$(echo "$pkg" | xargs)"
  [ -z "$pkg" ] && continue
  # node/npm may come from elsewhere on the machine; do not fight it.
  if { [ "$pkg" = nodejs ] && command -v node >/dev/null; } || { [ "$pkg" = npm ] && command -v npm >/dev/null; }; then
    continue
  fi
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done < deps/apt.txt

if [ ${#missing[@]} -gt 0 ]; then
  echo "deps: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# npm: reinstall only when the lock file changed since the last install.
stamp=node_modules/.strix-lock-stamp
if [ ! -f "$stamp" ] || ! cmp -s package-lock.json "$stamp"; then
  echo "deps: npm ci"
  npm ci --no-audit --no-fund --loglevel=error
  cp package-lock.json "$stamp"
fi
