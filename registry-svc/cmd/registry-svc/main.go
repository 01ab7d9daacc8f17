// Command registry-svc runs registry-svc on its own, for compose and Kubernetes.
package main

import (
	"context"
	"fmt"
	"os"

	registrysvc "github.com/mirobody/mirobody-go/registry-svc"
	"github.com/mirobody/mirobody-go/services/boot"
)

func main() {
	registrysvc.RunToolSandbox()
	env, err := boot.Setup("registry-svc", os.Args[1:], os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	s := registrysvc.New(registrysvc.Options{Config: env.Config, Log: env.Log, Metrics: env.Metrics})
	if err := env.Run(context.Background(), s); err != nil {
		env.Log.Error("registry-svc failed", "err", err)
		os.Exit(1)
	}
}
