//go:build !linux

package pyhost

import "os/exec"

// isolate is a no-op where process groups and parent-death signals are not
// available through syscall in the same way.
func isolate(*exec.Cmd) {}

// killGroup kills the host process.
func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = cmd.Process.Kill()
	}
}
