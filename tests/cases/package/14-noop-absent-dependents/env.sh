# `holo apply --noop` wherever the runner says `holo apply`: nothing may change.
real_holo=$HOLO_BINARY
holo_noop() {
    if [ "$1" = apply ]; then
        shift
        $real_holo apply --noop "$@"
    else
        $real_holo "$@"
    fi
}
HOLO_BINARY=holo_noop
