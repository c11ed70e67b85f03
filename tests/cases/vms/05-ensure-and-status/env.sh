# Every `holo apply` of this case runs as `holo apply --noop`: nothing starts.
noop_real_holo=$HOLO_BINARY
noop_holo() {
    case "$1" in
        apply) shift; "$noop_real_holo" apply --noop "$@" ;;
        *) "$noop_real_holo" "$@" ;;
    esac
}
HOLO_BINARY=noop_holo
