# A typo in a selector: Holo 3's line, then the nearest entity IDs. A
# selector that is close to nothing gets Holo 3's line alone.
holo_with_typos() {
    $HOLO_DRIVER "$@" file:/etc/mtod setting:colour bogus-selector
}
HOLO_DRIVER=$HOLO_BINARY
HOLO_BINARY=holo_with_typos
