# holo-shell declares the batch extension here: the fixture test runs this
# case batched and with HOLO_NO_BATCH=1, and both must give the same output
export HOLO_SHELL_EXTENSIONS=order,noop,batch
