# Owner drift cannot be written in a tree dump: give the file to nobody
# before each command, as a careless `chown` would.
chown 65534:65534 target/etc/owner-only.conf

# Run every apply as `holo apply --noop`, which must change nothing.
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
