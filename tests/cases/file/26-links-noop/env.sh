# Run every apply as `holo apply --noop` (see ../noop.sh).
. ../noop.sh
