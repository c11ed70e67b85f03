# The package lists are two days old: the first install refreshes them, once.
touch -d '2 days ago' target/var/lib/apt/lists
