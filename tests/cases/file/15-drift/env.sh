# Owner drift cannot be written in a tree dump: give the file to nobody
# before each command, as a careless `chown` would.
chown 65534:65534 target/etc/owner-only.conf
