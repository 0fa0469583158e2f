package servertest

import (
	"os/exec"
	"syscall"
)

// dieWithTest has the kernel kill the server when the test binary that
// started it dies, also by a panic (a -timeout) that skips every cleanup:
// a server left running would hold its port and, in a partition test, keep
// writing to the cluster the next run uses. The signal follows the thread
// that started the process (golang/go#27505), which in a test binary
// lives as long as the process: no test locks an OS thread.
func dieWithTest(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
