#!/usr/bin/env bash
# Installs the Debian packages of the blpp corpus (testdata/corpus/corpus.json)
# that are not installed yet. Idempotent; needs root and apt-get, and does
# nothing (with a note) without them. The package list is read from
# corpus.json, so the two cannot drift apart.
set -euo pipefail
cd "$(dirname "$0")"

mapfile -t pkgs < <(grep -o '"package": "[^"]*"' corpus.json | cut -d'"' -f4 | sort -u)
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
	echo "corpus: all ${#pkgs[@]} packages installed"
	exit 0
fi
if ! command -v apt-get >/dev/null 2>&1 || [ "$(id -u)" != 0 ]; then
	echo "corpus: not installed (needs root and apt-get): ${missing[*]}" >&2
	exit 0
fi
echo "corpus: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
