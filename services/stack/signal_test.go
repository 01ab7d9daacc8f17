package stack

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mirobody/mirobody-go/services/servicetest"
)

// TestHelperServe is not a test: TestSIGTERMDrainsAndExitsZero runs the
// test binary again with MIROBODY_HELPER=serve, and this becomes `mirobody serve`.
func TestHelperServe(t *testing.T) {
	if os.Getenv("MIROBODY_HELPER") != "serve" {
		return
	}
	os.Exit(Main(context.Background(), []string{"serve", "--target=registry-svc,agent-svc", "--config", "testdata/empty.yaml"}, os.Stdout, os.Stderr))
}

// A binary that gets SIGTERM drains, stops its services in reverse order
// and exits 0.
func TestSIGTERMDrainsAndExitsZero(t *testing.T) {
	natsURL := servicetest.NATS(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperServe$")
	cmd.Env = append(os.Environ(), "MIROBODY_HELPER=serve", "NATS_URL="+natsURL, "ADMIN_ADDR=127.0.0.1:0",
		"LOG_FORMAT=text", "TOOLS_WATCH=false")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var log []string
	waitFor := func(substr string) {
		t.Helper()
		timeout := time.After(30 * time.Second)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("binary exited before %q:\n%s", substr, strings.Join(log, "\n"))
				}
				log = append(log, l)
				if strings.Contains(l, substr) {
					return
				}
			case <-timeout:
				t.Fatalf("no %q within 30s:\n%s", substr, strings.Join(log, "\n"))
			}
		}
	}
	waitFor("msg=ready")
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for l := range lines {
		log = append(log, l)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", err, strings.Join(log, "\n"))
	}
	all := strings.Join(log, "\n")
	agent := strings.Index(all, `msg="service stopped" component=agent-svc`)
	registry := strings.Index(all, `msg="service stopped" component=registry-svc`)
	if agent < 0 || registry < 0 || agent > registry {
		t.Errorf("want agent-svc stopped before registry-svc (reverse start order):\n%s", all)
	}
}
