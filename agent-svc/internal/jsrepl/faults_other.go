//go:build !linux

package jsrepl

// threadFaults has no per-thread fault counts to read outside Linux: the
// ledger then splits growth equally (memory.go).
func threadFaults(int) (int64, bool) { return 0, false }

func currentThread() int { return 0 }
