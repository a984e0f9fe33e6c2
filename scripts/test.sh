#!/usr/bin/env bash
# The project's test command (npm test): type-check, then every unit, integration and
# conformance test under node:test with coverage by c8.
set -euo pipefail
cd "$(dirname "$0")/.."
npx tsc --noEmit -p tsconfig.json
npx tsc --noEmit -p tsconfig.test.json
# Integration tests run the bundled CLI (what users install, through bin/kvctl): build it first.
npm run build --silent
# --exclude-after-remap: the bundle carries pure-JS packages (scripts/bundle.mjs) whose
# files its source maps name; the exclusions (node_modules included) apply to those names,
# so only src/ is counted, as before the packages were bundled. 'dist/**' then leaves out
# what maps to no source: esbuild's helper chunks and the re-export stubs of lazy chunks.
mapfile -t files < <(find src test bench -name '*.test.ts' -not -path 'bench/tmp/*' | sort)
exec npx c8 --reporter=text-summary --reporter=lcov --src src --exclude-after-remap --exclude 'src/**/*.test.ts' --exclude 'dist/**' \
  node --import tsx --test --test-concurrency=1 --test-timeout=300000 "${files[@]}"
