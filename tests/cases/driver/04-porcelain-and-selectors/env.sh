# scan in porcelain form; diff and apply select entities by entity ID, by
# plugin ID and by SOURCE path (apply --force passes its option through)
holo_selecting() {
    case "$1" in
        scan) $HOLO_DRIVER scan --porcelain ;;
        diff) $HOLO_DRIVER diff setting:color file:/etc/motd ;;
        apply) $HOLO_DRIVER "$@" target/usr/share/holo/shell/settings/size command:hello file:/etc/motd ;;
    esac
}
HOLO_DRIVER=$HOLO_BINARY
HOLO_BINARY=holo_selecting
