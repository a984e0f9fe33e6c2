# bash completion for kvctl                                  -*- shell-script -*-
# Install: source this file, or copy it to /usr/share/bash-completion/completions/kvctl
# (`kvctl completion bash > ~/.local/share/bash-completion/completions/kvctl`).

_kvctl() {
    local cur prev words cword
    if declare -F _init_completion >/dev/null 2>&1; then
        _init_completion || return
    else
        cur="${COMP_WORDS[COMP_CWORD]}"; prev="${COMP_WORDS[COMP_CWORD-1]}"
        words=("${COMP_WORDS[@]}"); cword=$COMP_CWORD
    fi

    local commands="backup cluster-health mk mkdir rm rmdir get ls set setdir update updatedir watch exec-watch member user role auth endpoint migrate stats version completion serve v3 help"
    local globals="--debug --no-sync --output -o --discovery-srv -D --insecure-discovery --peers -C --endpoint --endpoints --cert --cert-file --key --key-file --cacert --ca-file --insecure-skip-tls-verify --insecure-transport --username -u --password --timeout --total-timeout --no-color --help -h --version -v"

    case "$prev" in
        -o|--output) COMPREPLY=($(compgen -W "simple extended json" -- "$cur")); return ;;
        -w|--write-out) COMPREPLY=($(compgen -W "simple json fields protobuf table" -- "$cur")); return ;;
        --cert|--cert-file|--key|--key-file|--cacert|--ca-file|--trusted-ca-file|--peer-cert-file|--peer-key-file|--peer-trusted-ca-file|--peer-ca-file|--peer-crl-file) COMPREPLY=($(compgen -f -- "$cur")); return ;;
        --insecure-transport) COMPREPLY=($(compgen -W "true false" -- "$cur")); return ;;
        --endpoints|--endpoint|--peers|-C|-D|--discovery-srv|--username|-u|--password|--timeout|--total-timeout|--ttl|--swap-with-value|--swap-with-index|--with-value|--with-index|--after-index|--roles|--path) return ;;
    esac

    # The command is the first word that is not a flag or a global flag's value.
    local i cmd="" sub=""
    for ((i = 1; i < cword; i++)); do
        case "${words[i]}" in
            -o|--output|-w|--write-out|--user|--dial-timeout|--command-timeout|--keepalive-time|--keepalive-timeout|-d|-D|--discovery-srv|--discovery-srv-name|--peers|-C|--endpoint|--endpoints|--cert|--cert-file|--key|--key-file|--cacert|--ca-file|--username|-u|--password|--timeout|--total-timeout) ((i++)) ;;
            -*) ;;
            *) if [[ -z $cmd ]]; then cmd="${words[i]}"; elif [[ -z $sub ]]; then sub="${words[i]}"; fi ;;
        esac
    done

    local flags=""
    case "$cmd" in
        "") COMPREPLY=($(compgen -W "$commands $globals" -- "$cur")); return ;;
        get) flags="--sort --quorum -q" ;;
        ls) flags="--sort --recursive -r -p --quorum -q" ;;
        set) flags="--ttl --swap-with-value --swap-with-index" ;;
        mk) flags="--in-order --ttl" ;;
        mkdir|setdir|update|updatedir) flags="--ttl" ;;
        rm) flags="--dir --recursive -r --with-value --with-index" ;;
        rmdir) flags="" ;;
        watch) flags="--forever -f --after-index --recursive -r" ;;
        exec-watch) flags="--after-index --recursive -r" ;;
        cluster-health) flags="--forever -f" ;;
        member) [[ -z $sub ]] && { COMPREPLY=($(compgen -W "list add remove update" -- "$cur")); return; } ;;
        user)
            [[ -z $sub ]] && { COMPREPLY=($(compgen -W "add get list remove grant revoke passwd" -- "$cur")); return; }
            [[ $sub == grant || $sub == revoke ]] && flags="--roles" ;;
        role)
            [[ -z $sub ]] && { COMPREPLY=($(compgen -W "add get list remove grant revoke" -- "$cur")); return; }
            [[ $sub == grant || $sub == revoke ]] && flags="--path --read --write --readwrite --rw" ;;
        auth) [[ -z $sub ]] && { COMPREPLY=($(compgen -W "enable disable status" -- "$cur")); return; } ;;
        endpoint)
            [[ -z $sub ]] && { COMPREPLY=($(compgen -W "status" -- "$cur")); return; }
            flags="--cluster" ;;
        backup) flags="--data-dir --wal-dir --backup-dir --backup-wal-dir --with-v3" ;;
        migrate) flags="--from --prefix --follow --from-cert --from-key --from-cacert --from-insecure-skip-tls-verify --from-user" ;;
        stats) [[ -z $sub ]] && { COMPREPLY=($(compgen -W "store self leader" -- "$cur")); return; } ;;
        completion) [[ -z $sub ]] && { COMPREPLY=($(compgen -W "bash zsh fish" -- "$cur")); return; } ;;
        serve) flags="--name --data-dir --listen-client-urls --advertise-client-urls --listen-peer-urls --initial-advertise-peer-urls --initial-cluster --initial-cluster-state --initial-cluster-token --snapshot-count --heartbeat-interval --election-timeout --max-request-bytes --max-txn-ops --log-level --cert-file --key-file --client-cert-auth --trusted-ca-file --ca-file --auto-tls --peer-cert-file --peer-key-file --peer-client-cert-auth --peer-trusted-ca-file --peer-ca-file --peer-auto-tls --peer-cert-allowed-cn --peer-crl-file --cipher-suites --host-whitelist --discovery-srv --discovery-srv-name --proxy --proxy-failure-wait --proxy-refresh-interval --proxy-dial-timeout --proxy-write-timeout --proxy-read-timeout --wal-dir --initial-election-tick-advance --max-snapshots --max-wals --quota-backend-bytes --backend-batch-interval --backend-batch-limit --max-concurrent-streams --grpc-keepalive-min-time --grpc-keepalive-interval --grpc-keepalive-timeout --discovery --discovery-fallback --discovery-proxy --strict-reconfig-check --pre-vote --auto-compaction-retention --auto-compaction-mode --enable-v2 --client-crl-file --client-cert-allowed-hostname --peer-cert-allowed-hostname --cors --auth-token --bcrypt-cost --auth-token-ttl --enable-pprof --metrics --listen-metrics-urls --logger --log-outputs --log-output --experimental-initial-corrupt-check --experimental-corrupt-check-time --experimental-enable-v2v3 --experimental-backend-bbolt-freelist-type --experimental-enable-lease-checkpoint --experimental-enable-lease-checkpoint-persist --experimental-lease-checkpoint-interval --experimental-compaction-batch-limit --experimental-peer-skip-client-san-verification --experimental-watch-progress-notify-interval --experimental-snapshot-catchup-entries --experimental-warning-apply-duration --force-new-cluster --unsafe-no-fsync --enable-grpc-gateway --debug --log-package-levels --config-file --version --help"
            # serve takes its own flags only, not the client's global ones.
            [[ $cur == -* ]] && COMPREPLY=($(compgen -W "$flags" -- "$cur"))
            return ;;
        v3)
            # kvctl v3: etcdctl v3's commands; the word after a group (lease, user, role, auth, alarm, snapshot, endpoint, member, check) is its subcommand.
            local v3flags="--endpoints --debug --write-out -w --hex --dial-timeout --command-timeout --keepalive-time --keepalive-timeout --insecure-transport --insecure-skip-tls-verify --cert --key --cacert --user --password --discovery-srv -d --discovery-srv-name --insecure-discovery"
            local sub2="" j
            for ((j = 1; j < cword - 1; j++)); do
                if [[ ${words[j]} == "$sub" && -n $sub ]]; then [[ ${words[j+1]} != -* ]] && sub2="${words[j+1]}"; break; fi
            done
            case "$sub" in
                "") COMPREPLY=($(compgen -W "get range put del txn compaction compact watch lease user role auth alarm defrag snapshot endpoint member move-leader lock elect make-mirror check migrate completion help version $v3flags" -- "$cur")); return ;;
                get|range) flags="--consistency --order --sort-by --limit --prefix --from-key --rev --keys-only --count-only --print-value-only" ;;
                put) flags="--lease --prev-kv --ignore-value --ignore-lease" ;;
                del) flags="--prefix --prev-kv --from-key" ;;
                txn) flags="--interactive -i --file" ;;
                compaction|compact) flags="--physical" ;;
                watch) flags="--interactive -i --prefix --rev --prev-kv" ;;
                lease) [[ -z $sub2 ]] && { COMPREPLY=($(compgen -W "grant revoke timetolive list keep-alive" -- "$cur")); return; }
                    case "$sub2" in timetolive) flags="--keys" ;; keep-alive) flags="--once" ;; esac ;;
                user) [[ -z $sub2 ]] && { COMPREPLY=($(compgen -W "add delete get list passwd grant-role revoke-role" -- "$cur")); return; }
                    case "$sub2" in add) flags="--interactive --new-user-password --no-password" ;; passwd) flags="--interactive" ;; get) flags="--detail" ;; esac ;;
                role) [[ -z $sub2 ]] && { COMPREPLY=($(compgen -W "add delete get list grant-permission revoke-permission" -- "$cur")); return; }
                    [[ $sub2 == grant-permission || $sub2 == revoke-permission ]] && flags="--prefix --from-key" ;;
                auth) [[ -z $sub2 ]] && { COMPREPLY=($(compgen -W "enable disable" -- "$cur")); return; } ;;
                alarm) [[ -z $sub2 ]] && { COMPREPLY=($(compgen -W "list disarm" -- "$cur")); return; } ;;
                defrag) flags="--cluster --data-dir" ;;
                migrate) flags="--data-dir --wal-dir --no-ttl --transformer" ;;
                snapshot) [[ -z $sub2 ]] && { COMPREPLY=($(compgen -W "save status restore" -- "$cur")); return; }
                    [[ $cur != -* ]] && { COMPREPLY=($(compgen -f -- "$cur")); return; }
                    [[ $sub2 == restore ]] && flags="--name --data-dir --initial-cluster --initial-cluster-token --initial-advertise-peer-urls --skip-hash-check --wal-dir" ;;
                endpoint) [[ -z $sub2 ]] && { COMPREPLY=($(compgen -W "health status hashkv" -- "$cur")); return; }
                    flags="--cluster"; [[ $sub2 == hashkv ]] && flags="--cluster --rev" ;;
                member) [[ -z $sub2 ]] && { COMPREPLY=($(compgen -W "add remove update list promote" -- "$cur")); return; }
                    case "$sub2" in add) flags="--peer-urls --learner" ;; update) flags="--peer-urls" ;; esac ;;
                lock) flags="--ttl" ;;
                elect) flags="--listen -l" ;;
                make-mirror) flags="--prefix --dest-prefix --no-dest-prefix --dest-cert --dest-key --dest-cacert --dest-insecure-transport" ;;
                check) [[ -z $sub2 ]] && { COMPREPLY=($(compgen -W "perf datascale" -- "$cur")); return; }
                    flags="--load --prefix --auto-compact --auto-defrag" ;;
                completion) [[ -z $sub2 ]] && { COMPREPLY=($(compgen -W "bash zsh fish" -- "$cur")); return; } ;;
            esac
            # etcdctl v3's flags only: the v2 global flags are no flags of kvctl v3.
            [[ $cur == -* ]] && COMPREPLY=($(compgen -W "$flags $v3flags --help" -- "$cur"))
            return ;;
        help) COMPREPLY=($(compgen -W "$commands" -- "$cur")); return ;;
    esac
    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$flags --help $globals" -- "$cur"))
    fi
}
complete -F _kvctl kvctl
