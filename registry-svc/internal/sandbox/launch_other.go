//go:build !linux

package sandbox

import "os/exec"

// isolation has no variant outside Linux: there is no sandbox to start.
type isolation struct{}

// candidates is empty: Landlock and the namespaces are Linux only.
func candidates() []isolation { return nil }

func (isolation) describe() string { return "unsupported" }

func (isolation) apply(*exec.Cmd) {}

// Main returns at once: there is no launcher outside Linux.
func Main() {}
