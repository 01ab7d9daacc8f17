// Command vfs-svc runs the virtual filesystem, accounts and user data service.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/mirobody/mirobody-go/services/boot"
	vfssvc "github.com/mirobody/mirobody-go/vfs-svc"
)

func main() {
	env, err := boot.Setup("vfs-svc", os.Args[1:], os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	s := vfssvc.New(vfssvc.Options{Config: env.Config, Log: env.Log, Metrics: env.Metrics})
	if err := env.Run(context.Background(), s); err != nil {
		env.Log.Error("vfs-svc failed", "err", err)
		os.Exit(1)
	}
}
