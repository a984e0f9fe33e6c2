#!/usr/bin/env bash
# The project's test command (npm test): type-check, build, then every unit, integration and
# conformance test (*.test.ts under src, test and bench) under node:test, in three runs with
# one coverage report over them:
#  1. the pure unit files listed in scripts/pure-tests.txt (no processes, sockets or timing),
#     split into one share per CPU (at least 2); each share is one process that imports its
#     files (scripts/in-process-tests.mjs), and the shares run at the same time;
#  2. the files that start servers and clusters but bound no time, each in its own process,
#     two at a time (scripts/run-lanes.mjs; each lane has its own copy of the tests' port
#     ranges): most of such a file is waiting for processes, so two share the machine;
#  3. the files of scripts/solo-tests.txt, which bound elapsed time or assume the machine is
#     theirs, each in its own process, one at a time (--test-concurrency=1).
# Each run prints node:test's totals; the last lines add them up. KVCTL_TEST_JOBS sets the
# number of shares; KVCTL_TEST_ISOLATE=1 gives each pure file its own process (still
# KVCTL_TEST_JOBS at once), to tell a file's own failure from a neighbour's doing;
# KVCTL_TEST_LANES sets how many files of run 2 run at once (1: one at a time).
set -euo pipefail
cd "$(dirname "$0")/.."
npx tsc --noEmit -p tsconfig.json
npx tsc --noEmit -p tsconfig.test.json
# Integration tests run the bundled CLI (what users install, through bin/kvctl): build it first.
npm run build --silent

mapfile -t files < <(find src test bench -name '*.test.ts' -not -path 'bench/tmp/*' | sort)
# read_list VAR LIST: VAR gets the files LIST names (comments and blank lines skipped); a
# listed file that is gone stops the run.
read_list() {
  local -n into=$1
  mapfile -t into < <(grep -v -e '^#' -e '^[[:space:]]*$' "$2")
  local f
  for f in "${into[@]}"; do [ -f "$f" ] || { echo "$2 lists $f, which does not exist" >&2; exit 1; }; done
}
read_list pure scripts/pure-tests.txt
read_list solo scripts/solo-tests.txt
declare -A is_pure=() is_solo=()
for f in "${pure[@]}"; do is_pure[$f]=1; done
for f in "${solo[@]}"; do
  [ -z "${is_pure[$f]:-}" ] || { echo "$f is in both scripts/pure-tests.txt and scripts/solo-tests.txt" >&2; exit 1; }
  is_solo[$f]=1
done
shared=()
for f in "${files[@]}"; do [ -n "${is_pure[$f]:-}" ] || [ -n "${is_solo[$f]:-}" ] || shared+=("$f"); done

jobs=${KVCTL_TEST_JOBS:-$(nproc)}
[ "$jobs" -ge 2 ] || jobs=2
isolate=${KVCTL_TEST_ISOLATE:-0}
lanes=${KVCTL_TEST_LANES:-2}
# Not passed on: kvctl's argument parser takes KV* variables for flags (KVCTL_TEST_JOBS
# reads as --ctl-test-jobs), and the CLI's parser tests would meet them.
unset KVCTL_TEST_JOBS KVCTL_TEST_ISOLATE KVCTL_TEST_LANES
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [ "$isolate" = 1 ]; then
  first=("${pure[@]}")
else
  first=()
  for ((i = 0; i < jobs; i++)); do
    share=()
    for ((j = i; j < ${#pure[@]}; j += jobs)); do share+=("$PWD/${pure[j]}"); done
    stub="$work/pure-$((i + 1))-of-$jobs.mjs"
    node -e 'const [runner, ...files] = process.argv.slice(1);
      process.stdout.write(`import { runInProcess } from ${JSON.stringify(runner)};\nawait runInProcess(${JSON.stringify(files)});\n`);' \
      "$PWD/scripts/in-process-tests.mjs" "${share[@]}" >"$stub"
    first+=("$stub")
  done
fi

# c8 would report after each run; the runs write raw V8 coverage where `c8 report` reads it
# (what c8 itself does around the one command it runs), and one report covers both.
rm -rf coverage/tmp
mkdir -p coverage/tmp
export NODE_V8_COVERAGE="$PWD/coverage/tmp"
status=0
node --import tsx --test --test-concurrency="$jobs" --test-timeout=300000 "${first[@]}" | tee "$work/pure.tap" || status=1
node scripts/run-lanes.mjs --lanes "$lanes" --timeout 300000 "${shared[@]}" | tee "$work/shared.tap" || status=1
node --import tsx --test --test-concurrency=1 --test-timeout=300000 "${solo[@]}" | tee "$work/solo.tap" || status=1
unset NODE_V8_COVERAGE

# --exclude-after-remap: the bundle carries pure-JS packages (scripts/bundle.mjs) whose
# files its source maps name; the exclusions (node_modules included) apply to those names.
# 'dist/**' then leaves out what maps to no source: esbuild's helper chunks and the
# re-export stubs of lazy chunks. The in-process runner is the harness, not under test.
npx c8 report --reporter=text-summary --reporter=lcov --src src --exclude-after-remap \
  --exclude 'src/**/*.test.ts' --exclude 'dist/**' --exclude 'scripts/in-process-tests.mjs' || status=1

# node:test's last lines of a run: "# tests N", "# pass N", ...; "tests pass fail cancelled skipped todo".
counts() { awk '/^# (tests|pass|fail|cancelled|skipped|todo) [0-9]+$/ { n[$2] = $3 } END { print n["tests"] + 0, n["pass"] + 0, n["fail"] + 0, n["cancelled"] + 0, n["skipped"] + 0, n["todo"] + 0 }' "$1"; }
read -r -a a < <(counts "$work/pure.tap")
read -r -a b < <(counts "$work/shared.tap")
read -r -a c < <(counts "$work/solo.tap")
how="several to a process, $jobs processes at once"
[ "$isolate" != 1 ] || how="each in its own process, $jobs at once"
line() { printf '%s: tests %d pass %d fail %d cancelled %d skipped %d todo %d\n' "$1" "${@:2}"; }
line "# pure unit files (${#pure[@]}, $how)" "${a[@]}"
line "# files with servers (${#shared[@]}, $lanes at a time)" "${b[@]}"
line "# solo files (${#solo[@]}, one at a time)" "${c[@]}"
sum=()
for k in 0 1 2 3 4 5; do sum+=($((a[k] + b[k] + c[k]))); done
line "# all ${#files[@]} files" "${sum[@]}"
exit "$status"
