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

    local commands="cluster-health mk mkdir rm rmdir get ls set setdir update updatedir watch exec-watch member user role auth endpoint stats version completion serve help"
    local globals="--debug --no-sync --output -o --peers -C --endpoint --endpoints --cert-file --key-file --ca-file --username -u --password --timeout --total-timeout --no-color --help -h --version -v"

    case "$prev" in
        -o|--output) COMPREPLY=($(compgen -W "simple extended json" -- "$cur")); return ;;
        --cert-file|--key-file|--ca-file) COMPREPLY=($(compgen -f -- "$cur")); return ;;
        --endpoints|--endpoint|--peers|-C|--username|-u|--password|--timeout|--total-timeout|--ttl|--swap-with-value|--swap-with-index|--with-value|--with-index|--after-index|--roles|--path) return ;;
    esac

    # The command is the first word that is not a flag or a global flag's value.
    local i cmd="" sub=""
    for ((i = 1; i < cword; i++)); do
        case "${words[i]}" in
            -o|--output|--peers|-C|--endpoint|--endpoints|--cert-file|--key-file|--ca-file|--username|-u|--password|--timeout|--total-timeout) ((i++)) ;;
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
        stats) [[ -z $sub ]] && { COMPREPLY=($(compgen -W "store self leader" -- "$cur")); return; } ;;
        completion) [[ -z $sub ]] && { COMPREPLY=($(compgen -W "bash zsh fish" -- "$cur")); return; } ;;
        serve) flags="--name --data-dir --listen-client-urls --advertise-client-urls --listen-peer-urls --initial-advertise-peer-urls --initial-cluster --initial-cluster-state --initial-cluster-token --snapshot-count --heartbeat-interval --election-timeout --max-request-bytes --log-level --help" ;;
        help) COMPREPLY=($(compgen -W "$commands" -- "$cur")); return ;;
    esac
    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$flags --help $globals" -- "$cur"))
    fi
}
complete -F _kvctl kvctl
