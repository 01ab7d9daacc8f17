// Command mirobody is the all-in-one binary: `mirobody dev` runs the whole
// stack in one process, `mirobody serve` any subset, and the account and
// keys commands administer a running stack over NATS.
package main

import (
	"context"
	"os"

	"github.com/mirobody/mirobody-go/services/stack"
)

func main() {
	os.Exit(stack.Main(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}
