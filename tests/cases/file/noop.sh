# Sourced by the env.sh of the noop cases: run every apply as
# `holo apply --noop`, which must change nothing.
real_holo="$HOLO_BINARY"
holo_noop() {
    if [ "$1" = apply ]; then
        shift
        "$real_holo" apply --noop "$@"
    else
        "$real_holo" "$@"
    fi
}
HOLO_BINARY=holo_noop
