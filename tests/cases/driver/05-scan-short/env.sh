# scan lists entity IDs only; apply selects the whole plugin by its ID
holo_short() {
    case "$1" in
        scan) $HOLO_DRIVER scan --short ;;
        *) $HOLO_DRIVER "$@" shell ;;
    esac
}
HOLO_DRIVER=$HOLO_BINARY
HOLO_BINARY=holo_short
