# every command gets one selector that matches an entity and one that does not
holo_with_selectors() {
    $HOLO_DRIVER "$@" setting:color bogus-selector
}
HOLO_DRIVER=$HOLO_BINARY
HOLO_BINARY=holo_with_selectors
