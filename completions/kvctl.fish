# fish completion for kvctl. Install: kvctl completion fish > ~/.config/fish/completions/kvctl.fish

set -l kvctl_commands cluster-health mk mkdir rm rmdir get ls set setdir update updatedir watch exec-watch member user role auth endpoint stats version completion serve

function __kvctl_no_command
    set -l cmds cluster-health mk mkdir rm rmdir get ls set setdir update updatedir watch exec-watch member user role auth endpoint stats version completion serve
    for w in (commandline -opc)[2..-1]
        contains -- $w $cmds; and return 1
    end
    return 0
end

# Global flags
complete -c kvctl -l debug -d 'output cURL commands which can be used to reproduce the request'
complete -c kvctl -l no-sync -d "don't synchronize cluster information before sending request"
complete -c kvctl -s o -l output -x -a 'simple extended json' -d 'output response in the given format'
complete -c kvctl -s C -l peers -x -d 'DEPRECATED - use --endpoints'
complete -c kvctl -l endpoint -x -d 'DEPRECATED - use --endpoints'
complete -c kvctl -l endpoints -x -d 'comma-delimited list of machine addresses, tried in turn'
complete -c kvctl -l cert-file -r -d 'identify HTTPS client using this SSL certificate file'
complete -c kvctl -l key-file -r -d 'identify HTTPS client using this SSL key file'
complete -c kvctl -l ca-file -r -d 'verify certificates of HTTPS-enabled servers using this CA bundle'
complete -c kvctl -s u -l username -x -d 'provide username[:password] and prompt if password is not supplied'
complete -c kvctl -l password -x -d 'password for --username'
complete -c kvctl -l timeout -x -d 'connection timeout per request (default 2s)'
complete -c kvctl -l total-timeout -x -d 'timeout for the command execution, except watch (default 5s)'
complete -c kvctl -l no-color -d 'never colour the output'
complete -c kvctl -s h -l help -d 'show help'
complete -c kvctl -s v -l version -d 'print the version'

# Commands
complete -c kvctl -n __kvctl_no_command -f -a cluster-health -d 'check the health of the etcd cluster'
complete -c kvctl -n __kvctl_no_command -f -a mk -d 'make a new key with a given value'
complete -c kvctl -n __kvctl_no_command -f -a mkdir -d 'make a new directory'
complete -c kvctl -n __kvctl_no_command -f -a rm -d 'remove a key or a directory'
complete -c kvctl -n __kvctl_no_command -f -a rmdir -d 'removes the key if it is an empty directory or a key-value pair'
complete -c kvctl -n __kvctl_no_command -f -a get -d 'retrieve the value of a key'
complete -c kvctl -n __kvctl_no_command -f -a ls -d 'retrieve a directory'
complete -c kvctl -n __kvctl_no_command -f -a set -d 'set the value of a key'
complete -c kvctl -n __kvctl_no_command -f -a setdir -d 'create a new directory or update an existing directory TTL'
complete -c kvctl -n __kvctl_no_command -f -a update -d 'update an existing key with a given value'
complete -c kvctl -n __kvctl_no_command -f -a updatedir -d 'update an existing directory'
complete -c kvctl -n __kvctl_no_command -f -a watch -d 'watch a key for changes'
complete -c kvctl -n __kvctl_no_command -f -a exec-watch -d 'watch a key for changes and exec an executable'
complete -c kvctl -n __kvctl_no_command -f -a member -d 'member add, remove, update and list subcommands'
complete -c kvctl -n __kvctl_no_command -f -a user -d 'user add, get, list, remove, grant, revoke and passwd subcommands'
complete -c kvctl -n __kvctl_no_command -f -a role -d 'role add, get, list, remove, grant and revoke subcommands'
complete -c kvctl -n __kvctl_no_command -f -a auth -d 'overall auth controls (enable, disable, status)'
complete -c kvctl -n __kvctl_no_command -f -a endpoint -d 'endpoint status subcommand'
complete -c kvctl -n __kvctl_no_command -f -a stats -d 'print store, self or leader statistics as JSON'
complete -c kvctl -n __kvctl_no_command -f -a version -d 'print the version of kvctl'
complete -c kvctl -n __kvctl_no_command -f -a completion -d 'print a shell completion script'
complete -c kvctl -n __kvctl_no_command -f -a serve -d 'Start a kvctl server (member)'

# Command flags
complete -c kvctl -n '__fish_seen_subcommand_from get ls' -l sort -d 'returns result in sorted order'
complete -c kvctl -n '__fish_seen_subcommand_from get ls' -s q -l quorum -d 'require quorum for get request'
complete -c kvctl -n '__fish_seen_subcommand_from ls rm watch exec-watch' -s r -l recursive -d 'recursive'
complete -c kvctl -n '__fish_seen_subcommand_from ls' -s p -d 'append slash (/) to directories'
complete -c kvctl -n '__fish_seen_subcommand_from set mk mkdir setdir update updatedir' -l ttl -x -d 'key time-to-live in seconds'
complete -c kvctl -n '__fish_seen_subcommand_from set' -l swap-with-value -x -d 'previous value'
complete -c kvctl -n '__fish_seen_subcommand_from set' -l swap-with-index -x -d 'previous index'
complete -c kvctl -n '__fish_seen_subcommand_from mk' -l in-order -d 'create in-order key under directory <key>'
complete -c kvctl -n '__fish_seen_subcommand_from rm' -l dir -d 'removes the key if it is an empty directory or a key-value pair'
complete -c kvctl -n '__fish_seen_subcommand_from rm' -l with-value -x -d 'previous value'
complete -c kvctl -n '__fish_seen_subcommand_from rm' -l with-index -x -d 'previous index'
complete -c kvctl -n '__fish_seen_subcommand_from watch cluster-health' -s f -l forever -d 'run until CTRL+C'
complete -c kvctl -n '__fish_seen_subcommand_from watch exec-watch' -l after-index -x -d 'watch after the given index'
complete -c kvctl -n '__fish_seen_subcommand_from member' -f -a 'list add remove update'
complete -c kvctl -n '__fish_seen_subcommand_from stats' -f -a 'store self leader'
complete -c kvctl -n '__fish_seen_subcommand_from user; and not __fish_seen_subcommand_from add get list remove grant revoke passwd' -f -a 'add get list remove grant revoke passwd'
complete -c kvctl -n '__fish_seen_subcommand_from role; and not __fish_seen_subcommand_from add get list remove grant revoke' -f -a 'add get list remove grant revoke'
complete -c kvctl -n '__fish_seen_subcommand_from auth' -f -a 'enable disable status'
complete -c kvctl -n '__fish_seen_subcommand_from endpoint' -f -a 'status'
complete -c kvctl -n '__fish_seen_subcommand_from user; and __fish_seen_subcommand_from grant revoke' -l roles -x -d 'role to grant or revoke (repeat for several)'
complete -c kvctl -n '__fish_seen_subcommand_from role; and __fish_seen_subcommand_from grant revoke' -l path -x -d 'path or prefix (ending in *)'
complete -c kvctl -n '__fish_seen_subcommand_from role; and __fish_seen_subcommand_from grant revoke' -l read -d 'read access'
complete -c kvctl -n '__fish_seen_subcommand_from role; and __fish_seen_subcommand_from grant revoke' -l write -d 'write access'
complete -c kvctl -n '__fish_seen_subcommand_from role; and __fish_seen_subcommand_from grant revoke' -l readwrite -l rw -d 'read-write access'
complete -c kvctl -n '__fish_seen_subcommand_from endpoint' -l cluster -d 'use all endpoints from the cluster member list'
complete -c kvctl -n '__fish_seen_subcommand_from completion' -f -a 'bash zsh fish'

# serve flags
complete -c kvctl -n '__fish_seen_subcommand_from serve' -l name -x -d 'member name (default: default)'
complete -c kvctl -n '__fish_seen_subcommand_from serve' -l data-dir -r -d 'data directory (default: <name>.kvctl)'
complete -c kvctl -n '__fish_seen_subcommand_from serve' -l listen-client-urls -x -d 'client URLs to listen on'
complete -c kvctl -n '__fish_seen_subcommand_from serve' -l advertise-client-urls -x -d 'client URLs to advertise'
complete -c kvctl -n '__fish_seen_subcommand_from serve' -l listen-peer-urls -x -d 'peer URLs to listen on'
complete -c kvctl -n '__fish_seen_subcommand_from serve' -l initial-advertise-peer-urls -x -d 'peer URLs to advertise'
complete -c kvctl -n '__fish_seen_subcommand_from serve' -l initial-cluster -x -d 'initial cluster configuration'
complete -c kvctl -n '__fish_seen_subcommand_from serve' -l initial-cluster-state -x -a 'new existing' -d 'initial cluster state'
complete -c kvctl -n '__fish_seen_subcommand_from serve' -l initial-cluster-token -x -d 'initial cluster token'
complete -c kvctl -n '__fish_seen_subcommand_from serve' -l snapshot-count -x -d 'committed entries between snapshots'
complete -c kvctl -n '__fish_seen_subcommand_from serve' -l heartbeat-interval -x -d 'heartbeat interval in ms'
complete -c kvctl -n '__fish_seen_subcommand_from serve' -l election-timeout -x -d 'election timeout in ms'
complete -c kvctl -n '__fish_seen_subcommand_from serve' -l max-request-bytes -x -d 'maximum client request size in bytes'
complete -c kvctl -n '__fish_seen_subcommand_from serve' -l log-level -x -a 'debug info warn error' -d 'log level'
