// Command agent-svc runs agent-svc on its own, for compose and Kubernetes.
package main

import (
	"context"
	"fmt"
	"os"

	agentsvc "github.com/mirobody/mirobody-go/agent-svc"
	"github.com/mirobody/mirobody-go/services/boot"
)

func main() {
	env, err := boot.Setup("agent-svc", os.Args[1:], os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	s := agentsvc.New(agentsvc.Options{Config: env.Config, Log: env.Log, Metrics: env.Metrics})
	if err := env.Run(context.Background(), s); err != nil {
		env.Log.Error("agent-svc failed", "err", err)
		os.Exit(1)
	}
}
