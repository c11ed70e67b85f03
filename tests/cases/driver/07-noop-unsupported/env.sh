# apply runs as `apply --noop`: holo-shell does not declare the noop
# extension, so the driver must skip its entities with a warning
holo_noop() {
    case "$1" in
        apply) shift; $HOLO_DRIVER apply --noop "$@" ;;
        *) $HOLO_DRIVER "$@" ;;
    esac
}
HOLO_DRIVER=$HOLO_BINARY
HOLO_BINARY=holo_noop
# holo-shell declares noop unless told otherwise
export HOLO_SHELL_EXTENSIONS=order
