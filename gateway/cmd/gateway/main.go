// Command gateway runs the HTTP edge on its own, for compose and Kubernetes.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/mirobody/mirobody-go/gateway"
	"github.com/mirobody/mirobody-go/services/boot"
)

func main() {
	env, err := boot.Setup("gateway", os.Args[1:], os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	s := gateway.New(gateway.Options{Config: env.Config, Log: env.Log, Metrics: env.Metrics})
	if err := env.Run(context.Background(), s); err != nil {
		env.Log.Error("gateway failed", "err", err)
		os.Exit(1)
	}
}
