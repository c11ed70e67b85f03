# apply runs as `apply --noop`: nothing may change, and the exit status says
# whether something would (2) or not (0)
holo_noop() {
    case "$1" in
        apply) shift; $HOLO_DRIVER apply --noop "$@" ;;
        *) $HOLO_DRIVER "$@" ;;
    esac
}
HOLO_DRIVER=$HOLO_BINARY
HOLO_BINARY=holo_noop
