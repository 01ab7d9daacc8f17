package pyhost

import (
	"os/exec"
	"syscall"
)

// isolate puts the host in its own process group, so that killing it also
// kills any subprocess a tool started, and asks the kernel to kill it if
// registry-svc dies first (no orphans).
func isolate(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	// Added to the sandbox's namespace settings, if any.
	cmd.SysProcAttr.Setpgid = true
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}

// killGroup kills the host's whole process group.
func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
