// Command nodetools installs the Node toolchain of the real-client tests
// (see package nodetools) and prints its folder. `make node-tools` runs it
// early in CI so that the download overlaps compiling.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/mirobody/mirobody-go/services/servicetest/nodetools"
)

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	_, dir, err := nodetools.Install(ctx)
	if err != nil {
		fmt.Fprintf(os.Stderr, "nodetools: %v\n", err)
		os.Exit(1)
	}
	fmt.Println(dir)
}
