# fish completion for holo(8). Entity selectors come from `holo selectors`,
# as in Holo 3; it honours HOLO_ROOT_DIR, so test roots complete too.

set -l holo_commands apply diff scan selectors help version
complete -c holo -f
complete -c holo -n "not __fish_seen_subcommand_from $holo_commands" -a apply -d 'Apply the configuration'
complete -c holo -n "not __fish_seen_subcommand_from $holo_commands" -a diff -d 'Show what apply would change'
complete -c holo -n "not __fish_seen_subcommand_from $holo_commands" -a scan -d 'List the declared entities'
complete -c holo -n "not __fish_seen_subcommand_from $holo_commands" -a selectors -d 'List every valid selector'
complete -c holo -n "not __fish_seen_subcommand_from $holo_commands" -a help -d 'Print the usage'
complete -c holo -n "not __fish_seen_subcommand_from $holo_commands" -a version -d 'Print the version'
complete -c holo -n "__fish_seen_subcommand_from apply diff scan" -a '(holo selectors 2>/dev/null)'
complete -c holo -n "__fish_seen_subcommand_from apply" -s f -l force -d 'Overwrite manual changes too'
complete -c holo -n "__fish_seen_subcommand_from apply" -l noop -d 'Only show what would change'
complete -c holo -n "__fish_seen_subcommand_from apply" -l monitor-only -d 'Run only the health checks'
complete -c holo -n "__fish_seen_subcommand_from scan" -s s -l short -d 'Entity IDs only'
complete -c holo -n "__fish_seen_subcommand_from scan" -s p -l porcelain -d 'Machine-readable report'
