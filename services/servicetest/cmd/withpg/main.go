// Command withpg starts one private PostgreSQL cluster, runs the command it
// is given with TEST_DATABASE_URL pointing at it, and stops the cluster
// afterwards. `make test` wraps `go test` in it, so that every test package
// of one run shares one server (each still gets fresh databases).
package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/mirobody/mirobody-go/services/servicetest"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: withpg command [args...]")
		os.Exit(2)
	}
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	if os.Getenv(servicetest.EnvDatabaseURL) == "" {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		c, dir, err := servicetest.StartCluster(ctx, nil)
		cancel()
		if err != nil {
			fmt.Fprintf(os.Stderr, "withpg: %v\n", err)
			return 1
		}
		defer os.RemoveAll(dir)
		defer func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_ = c.Stop(ctx)
		}()
		os.Setenv(servicetest.EnvDatabaseURL, c.DSN("postgres"))
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	signal.Ignore(syscall.SIGINT) // the child gets Ctrl-C; we stay to clean up
	if err := cmd.Run(); err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		fmt.Fprintf(os.Stderr, "withpg: %v\n", err)
		return 1
	}
	return 0
}
