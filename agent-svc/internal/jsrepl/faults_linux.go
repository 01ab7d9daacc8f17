package jsrepl

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"syscall"
)

// threadFaults reads the minor page faults of a thread of this process
// (field 10 of /proc/self/task/<tid>/stat). A goroutine that grows the
// heap writes to pages the process never touched, so it faults, on its
// own thread; one that reuses freed memory does not. The ledger weighs
// the heap's growth by these counts (memory.go). ok is false when the
// file cannot be read.
func threadFaults(tid int) (n int64, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/self/task/%d/stat", tid))
	if err != nil {
		return 0, false
	}
	// The command name, in parentheses, may hold spaces: the fields
	// counted from 3 follow its closing parenthesis.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 8 {
		return 0, false
	}
	n, err = strconv.ParseInt(string(f[7]), 10, 64)
	return n, err == nil
}

// currentThread is the calling thread's id.
func currentThread() int { return syscall.Gettid() }
