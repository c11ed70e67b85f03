# holo-test creates a resource directory for every plugin; this case needs
# the directory of "shell" to be missing
rm -rf target/usr/share/holo/shell
