# only command:deploy is selected: what it requires or subscribes to is
# neither applied nor blocking
holo_deploy_only() {
    $HOLO_DRIVER "$@" command:deploy
}
HOLO_DRIVER=$HOLO_BINARY
HOLO_BINARY=holo_deploy_only
