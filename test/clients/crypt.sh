#!/usr/bin/env bash
# Drives crypt (xordataexchange, Debian golang-github-xordataexchange-crypt: the CLI of the
# config store spf13/viper reads remotely; built with etcd 3.4.23's v2 client) against one
# etcd v2 endpoint: set/get/list, plaintext and OpenPGP-encrypted, and the error paths
# (missing key, a dir, a value that does not decrypt, the wrong keyring). One line per
# step: exit status, output, error; the index an etcd error names is masked ([IDX]), the
# ciphertext shown by its armor-free shape only. Needs gpg (a throwaway key, no passphrase).
#
# Usage: crypt.sh http://127.0.0.1:<port>    (a fresh server, --enable-v2=true)
set -uo pipefail
endpoint=$1
work=$(mktemp -d /tmp/crypt-scenario.XXXXXX)
trap 'gpgconf --homedir "$work/gnupg" --kill all >/dev/null 2>&1; rm -rf "$work"' EXIT
C=crypt-xordataexchange

keypair() { # $1: name; writes $work/$1.pub and $work/$1.sec
  local home="$work/gnupg"
  mkdir -p -m 700 "$home"
  printf '%s\n' '%no-protection' 'Key-Type: RSA' 'Key-Length: 1024' 'Subkey-Type: RSA' 'Subkey-Length: 1024' \
    "Name-Real: $1" "Name-Email: $1@example.com" 'Expire-Date: 0' '%commit' >"$work/$1.batch"
  gpg --homedir "$home" --batch --gen-key "$work/$1.batch" >/dev/null 2>&1
  gpg --homedir "$home" --armor --export "$1@example.com" >"$work/$1.pub"
  gpg --homedir "$home" --armor --export-secret-keys "$1@example.com" >"$work/$1.sec"
}

# step NAME [--cipher] ARGS...: runs crypt, prints "NAME: rc=N out=... err=..."
step() {
  local name=$1 cipher=0
  shift
  if [ "$1" = --cipher ]; then cipher=1; shift; fi
  local o e rc
  o=$("$C" "$@" 2>"$work/err")
  rc=$?
  e=$(sed -E -e 's/\[[0-9]+\]/[IDX]/g' -e "s|$work|WORK|g" "$work/err" | tr '\n' ' ' | sed 's/ $//')
  if [ $cipher = 1 ] && [ -n "$o" ]; then
    # base64 of an OpenPGP message: its bytes vary with every encryption
    if printf '%s' "$o" | base64 -d >/dev/null 2>&1; then o="<base64 ciphertext>"; else o="<not base64: $o>"; fi
  fi
  printf '%s: rc=%s out=%s err=%s\n' "$name" "$rc" "$(printf '%s' "$o" | tr '\n' '|')" "$e"
}

keypair app
keypair other
printf '{"db":"postgres://x","port":5432}\n' >"$work/config.json"
printf 'plain value\n' >"$work/plain.txt"
: >"$work/empty.txt"

echo "## plaintext"
step "set plaintext /p/config" set -endpoint "$endpoint" -plaintext /p/config "$work/plain.txt"
step "get plaintext /p/config" get -endpoint "$endpoint" -plaintext /p/config
step "set plaintext again (overwrite)" set -endpoint "$endpoint" -plaintext /p/config "$work/config.json"
step "get plaintext /p/config" get -endpoint "$endpoint" -plaintext /p/config
step "set plaintext empty file" set -endpoint "$endpoint" -plaintext /p/empty "$work/empty.txt"
step "get plaintext empty" get -endpoint "$endpoint" -plaintext /p/empty
step "list plaintext /p/sub (one key)" list -endpoint "$endpoint" -plaintext /p/sub
step "set plaintext /p/sub/a" set -endpoint "$endpoint" -plaintext /p/sub/a "$work/plain.txt"
step "list plaintext /p/sub" list -endpoint "$endpoint" -plaintext /p/sub
step "get missing" get -endpoint "$endpoint" -plaintext /p/missing
step "list missing" list -endpoint "$endpoint" -plaintext /nope
step "get a dir" get -endpoint "$endpoint" -plaintext /p/sub
step "set over a dir" set -endpoint "$endpoint" -plaintext /p/sub "$work/plain.txt"
step "set below a file" set -endpoint "$endpoint" -plaintext /p/config/x "$work/plain.txt"
step "list a file" list -endpoint "$endpoint" -plaintext /p/config
step "set missing file" set -endpoint "$endpoint" -plaintext /p/x "$work/none.json"

echo "## encrypted"
step "set encrypted /e/config" set -endpoint "$endpoint" -keyring "$work/app.pub" /e/config "$work/config.json"
step "get encrypted /e/config" get -endpoint "$endpoint" -secret-keyring "$work/app.sec" /e/config
step "get encrypted as plaintext" --cipher get -endpoint "$endpoint" -plaintext /e/config
step "get encrypted, other key" get -endpoint "$endpoint" -secret-keyring "$work/other.sec" /e/config
step "get plaintext value, decrypting" get -endpoint "$endpoint" -secret-keyring "$work/app.sec" /p/config
step "set encrypted /e/sub/a" set -endpoint "$endpoint" -keyring "$work/app.pub" /e/sub/a "$work/plain.txt"
step "list encrypted /e/sub" list -endpoint "$endpoint" -secret-keyring "$work/app.sec" /e/sub
step "get encrypted missing" get -endpoint "$endpoint" -secret-keyring "$work/app.sec" /e/missing
step "set encrypted, missing keyring" set -endpoint "$endpoint" -keyring "$work/none.pub" /e/x "$work/config.json"
step "get encrypted, missing keyring" get -endpoint "$endpoint" -secret-keyring "$work/none.sec" /e/config

echo "## v2 view"
# What crypt wrote, as a v2 client sees it (values shown for the plaintext keys only).
curl -fsS "$endpoint/v2/keys/p?recursive=true&sorted=true" |
  python3 -c 'import json,sys
def walk(n, d=0):
    print("  " * d + n["key"] + ("/" if n.get("dir") else "=" + json.dumps(n.get("value"))))
    for c in n.get("nodes", []): walk(c, d + 1)
walk(json.load(sys.stdin)["node"])'
echo "## end"
