// Package pgcluster runs a private PostgreSQL cluster from the local server
// binaries, for `mirobody dev` and for tests. The postmaster is a child of
// this process: it gets its own process group (so a terminal's Ctrl-C
// reaches us first and we stop it in order) and a parent-death signal (so
// it never outlives us, even after kill -9).
package pgcluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// InstallHint says how to get the server binaries on Debian or Ubuntu.
const InstallHint = "install the PostgreSQL server binaries: sudo apt-get install -y postgresql (or set PG_BIN to their folder)"

// Options configures a cluster.
type Options struct {
	// Dir is the data directory. It is created and initialised when empty,
	// and reused as it is when it already holds a cluster.
	Dir string
	// BinDir holds initdb and postgres; empty means auto-detect.
	BinDir string
	// Port to listen on (127.0.0.1 only); 0 picks a free one.
	Port int
	// Log receives the server's output lines.
	Log *slog.Logger
	// Fsync off trades durability for speed; for tests only.
	NoFsync bool
}

// Cluster is a running private PostgreSQL server.
type Cluster struct {
	opts     Options
	cmd      *exec.Cmd
	port     int
	password string
	exited   chan struct{}
	waitErr  error
}

// FindBinDir returns the folder holding initdb and postgres: the newest
// /usr/lib/postgresql/<v>/bin, else the folder of initdb on PATH.
func FindBinDir() (string, error) {
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	sort.Slice(matches, func(i, j int) bool { return version(matches[i]) > version(matches[j]) })
	if len(matches) > 0 {
		return filepath.Dir(matches[0]), nil
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	return "", errors.New("no PostgreSQL server binaries (initdb, postgres) found; " + InstallHint)
}

func version(initdb string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(initdb))))
	return v
}

// Name implements svc.Service.
func (c *Cluster) Name() string { return "postgres" }

// New returns a cluster that is not started.
func New(opts Options) *Cluster { return &Cluster{opts: opts} }

// DSN returns the superuser connection string of the running cluster.
func (c *Cluster) DSN(dbname string) string {
	u := url.URL{Scheme: "postgres", User: url.UserPassword("postgres", c.password),
		Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(c.port)), Path: "/" + dbname, RawQuery: "sslmode=disable"}
	return u.String()
}

// Start initialises the data directory if needed, starts the postmaster and
// waits until it accepts connections.
func (c *Cluster) Start(ctx context.Context) error {
	if c.opts.BinDir == "" {
		bin, err := FindBinDir()
		if err != nil {
			return err
		}
		c.opts.BinDir = bin
	}
	cred, err := serverCredential()
	if err != nil {
		return err
	}
	dir, err := filepath.Abs(c.opts.Dir)
	if err != nil {
		return fmt.Errorf("resolving data directory: %w", err)
	}
	c.opts.Dir = dir
	if cred != nil {
		if err := reachable(dir, cred); err != nil {
			return err
		}
	}
	if err := c.initdb(ctx, cred); err != nil {
		return err
	}
	pw, err := os.ReadFile(c.passwordFile())
	if err != nil {
		return fmt.Errorf("reading cluster password: %w", err)
	}
	c.password = strings.TrimSpace(string(pw))
	for attempt := 0; ; attempt++ {
		err := c.launch(ctx, cred)
		if err == nil {
			return nil
		}
		// A port picked as free can be taken before the postmaster binds it.
		if c.opts.Port != 0 || attempt >= 3 || !errors.Is(err, errExitedEarly) {
			return err
		}
	}
}

var errExitedEarly = errors.New("postgres exited during startup")

func (c *Cluster) passwordFile() string { return filepath.Join(c.opts.Dir, "mirobody.password") }

func (c *Cluster) initdb(ctx context.Context, cred *syscall.Credential) error {
	if _, err := os.Stat(filepath.Join(c.opts.Dir, "PG_VERSION")); err == nil {
		return nil
	}
	if err := os.MkdirAll(c.opts.Dir, 0o700); err != nil {
		return fmt.Errorf("creating data directory: %w", err)
	}
	if entries, _ := os.ReadDir(c.opts.Dir); len(entries) > 0 {
		return fmt.Errorf("data directory %s is not empty and holds no cluster", c.opts.Dir)
	}
	pw := make([]byte, 18)
	if _, err := rand.Read(pw); err != nil {
		return fmt.Errorf("generating cluster password: %w", err)
	}
	password := hex.EncodeToString(pw)
	pwfile, err := os.CreateTemp("", "mirobody-pw-*")
	if err != nil {
		return fmt.Errorf("writing password file: %w", err)
	}
	defer os.Remove(pwfile.Name())
	if _, err := pwfile.WriteString(password + "\n"); err != nil {
		return fmt.Errorf("writing password file: %w", err)
	}
	_ = pwfile.Close()
	if cred != nil {
		for _, p := range []string{c.opts.Dir, pwfile.Name()} {
			if err := os.Chown(p, int(cred.Uid), int(cred.Gid)); err != nil {
				return fmt.Errorf("handing %s to the postgres user: %w", p, err)
			}
		}
	}
	cmd := exec.CommandContext(ctx, filepath.Join(c.opts.BinDir, "initdb"),
		"-D", c.opts.Dir, "-U", "postgres", "--auth=scram-sha-256", "--pwfile="+pwfile.Name(),
		"-E", "UTF8", "--locale=C.UTF-8", "--no-instructions")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("running initdb in %s: %w: %s", c.opts.Dir, err, lastLine(out))
	}
	// The password file sits in the data directory so that a second run
	// finds the same cluster and credentials.
	if err := os.WriteFile(c.passwordFile(), []byte(password+"\n"), 0o600); err != nil {
		return fmt.Errorf("saving cluster password: %w", err)
	}
	return nil
}

func (c *Cluster) launch(ctx context.Context, cred *syscall.Credential) error {
	port := c.opts.Port
	if port == 0 {
		p, err := freePort()
		if err != nil {
			return err
		}
		port = p
	}
	args := []string{"-D", c.opts.Dir, "-p", strconv.Itoa(port),
		"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=",
		"-c", "max_connections=200", "-c", "logging_collector=off"}
	if c.opts.NoFsync {
		args = append(args, "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off")
	}
	cmd := exec.Command(filepath.Join(c.opts.BinDir, "postgres"), args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Setpgid: true, Pdeathsig: syscall.SIGQUIT}
	logw := &lineLogger{log: c.opts.Log}
	cmd.Stdout, cmd.Stderr = logw, logw
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting postgres: %w", err)
	}
	c.cmd, c.port, c.exited = cmd, port, make(chan struct{})
	go func() { c.waitErr = cmd.Wait(); close(c.exited) }()
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case <-c.exited:
			return fmt.Errorf("%w: %v: %s", errExitedEarly, c.waitErr, logw.last())
		case <-ctx.Done():
			_ = c.Stop(context.Background())
			return fmt.Errorf("waiting for postgres: %w", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		conn, err := pgx.Connect(pctx, c.DSN("postgres"))
		cancel()
		if err == nil {
			_ = conn.Close(ctx)
			return nil
		}
		if time.Now().After(deadline) {
			_ = c.Stop(context.Background())
			return fmt.Errorf("postgres did not accept connections within 60s: %w", err)
		}
	}
}

// Stop asks the postmaster for a fast shutdown and waits for it to exit.
func (c *Cluster) Stop(ctx context.Context) error {
	if c.cmd == nil || c.cmd.Process == nil {
		return nil
	}
	select {
	case <-c.exited:
		return nil
	default:
	}
	_ = c.cmd.Process.Signal(syscall.SIGINT) // fast shutdown: roll back, checkpoint, exit
	select {
	case <-c.exited:
		return nil
	case <-ctx.Done():
		_ = c.cmd.Process.Signal(syscall.SIGQUIT)
		<-c.exited
		return fmt.Errorf("postgres did not stop in time: %w", ctx.Err())
	}
}

// serverCredential returns the postgres user's credential when we run as
// root (initdb and postgres refuse to run as root), or nil otherwise.
func serverCredential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as root needs the 'postgres' system user to own the cluster: %w; %s", err, InstallHint)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// reachable checks that the postgres user can walk down to dir's parent.
func reachable(dir string, cred *syscall.Credential) error {
	for p := filepath.Dir(dir); ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				if p == filepath.Dir(p) {
					return nil
				}
				continue
			}
			return fmt.Errorf("checking %s: %w", p, err)
		}
		st := fi.Sys().(*syscall.Stat_t)
		mode := fi.Mode().Perm()
		ok := mode&0o001 != 0 || (st.Uid == cred.Uid && mode&0o100 != 0) || (st.Gid == cred.Gid && mode&0o010 != 0)
		if !ok {
			return &UnreachableError{Dir: dir, Blocker: p}
		}
		if p == filepath.Dir(p) {
			return nil
		}
	}
}

// UnreachableError says that the postgres user cannot reach the data
// directory because a parent folder is closed to it.
type UnreachableError struct{ Dir, Blocker string }

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("the postgres user cannot reach %s: %s is not searchable by others", e.Dir, e.Blocker)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return lines[len(lines)-1]
}
