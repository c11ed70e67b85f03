# the batch process dies during the second entity: the entities without a
# record fail with its exit status. Always batched, also under HOLO_NO_BATCH=1.
export HOLO_SHELL_EXTENSIONS=order,noop,batch
unset HOLO_NO_BATCH
