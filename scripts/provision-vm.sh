#!/usr/bin/env bash
# Provisions the lab VM: p4c, bmv2 and PI from the p4lang project's Ubuntu packages,
# Mininet, and the project's own setup (.venv with the pinned Python dependencies).
# Idempotent: safe to run again (`vagrant provision`).
set -euo pipefail

export DEBIAN_FRONTEND=noninteractive
# shellcheck source=/dev/null
. /etc/os-release
P4LANG_REPO="https://download.opensuse.org/repositories/home:/p4lang/xUbuntu_${VERSION_ID}"
KEYRING=/etc/apt/trusted.gpg.d/home_p4lang.gpg
SOURCES=/etc/apt/sources.list.d/home:p4lang.list

apt-get update -qq
apt-get install -y -qq curl gnupg ca-certificates >/dev/null

if [[ ! -s $KEYRING ]]; then
    echo "provision: adding the p4lang package repository for Ubuntu ${VERSION_ID}"
    curl -fsSL "${P4LANG_REPO}/Release.key" | gpg --dearmor > "$KEYRING"
fi
if [[ ! -f $SOURCES ]]; then
    echo "deb ${P4LANG_REPO}/ /" > "$SOURCES"
    apt-get update -qq
fi

echo "provision: installing p4lang-p4c, p4lang-bmv2, p4lang-pi and Mininet"
apt-get install -y -qq p4lang-p4c p4lang-bmv2 p4lang-pi mininet >/dev/null

# The project's own setup: system packages it needs (the optional ones too: the VM runs the
# tests) and the .venv.
cd /vagrant
bash scripts/setup.sh --all

echo "provision: done. Try: cd /vagrant && sudo make run"
