#!/usr/bin/env bash
# Builds scenario.go (docker's libkv against one etcd v2 endpoint) in GOPATH mode, offline,
# from the Debian packages' sources: apt-get install golang-go golang-github-docker-libkv-dev
# (which brings github.com/coreos/etcd/client). Usage: build.sh <output binary>.
# Then: <binary> -endpoint 127.0.0.1:<port>, against a fresh server started with
# --enable-v2=true; its output against etcd 3.4.23 is expected.txt.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
export GO111MODULE=off GOPATH=/tmp/libkv-scenario-gopath:/usr/share/gocode GOFLAGS= GOCACHE=${GOCACHE:-/tmp/libkv-scenario-cache}
cd "$here" && go build -o "$1" scenario.go
