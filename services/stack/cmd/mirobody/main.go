// Command mirobody is the all-in-one binary: `mirobody dev` runs the whole
// stack in one process, `mirobody serve` any subset, and the account and
// keys commands administer a running stack over NATS.
package main

import (
	"context"
	"os"

	registrysvc "github.com/mirobody/mirobody-go/registry-svc"
	"github.com/mirobody/mirobody-go/services/stack"
)

func main() {
	// First: this binary is also the Python tool sandbox's launcher.
	registrysvc.RunToolSandbox()
	os.Exit(stack.Main(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}
