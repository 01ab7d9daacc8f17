//go:build linux

package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsyscall "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// nobody is the uid and gid tools run as inside their user namespace.
const nobody = 65534

// isolation is how the launcher process is started.
type isolation struct {
	// userns starts it in new user, PID and IPC namespaces as nobody.
	userns bool
}

// candidates lists the isolations to probe, strongest first. Without user
// namespaces (a container whose seccomp profile forbids them) a non-root
// service still gets Landlock, whose scoping keeps tools from signalling,
// tracing or reading /proc of processes outside the sandbox; a root service
// never runs tools without a namespace, since uid 0 is what it must shed.
func candidates() []isolation {
	out := []isolation{{userns: true}}
	if os.Getuid() != 0 {
		out = append(out, isolation{})
	}
	return out
}

func (i isolation) describe() string {
	if i.userns {
		return "landlock, user+pid+ipc namespaces (uid nobody), no_new_privs"
	}
	return "landlock with signal and abstract-socket scoping, no_new_privs (no user namespaces)"
}

func (i isolation) apply(cmd *exec.Cmd) {
	if !i.userns {
		return
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWPID | syscall.CLONE_NEWIPC,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: nobody, HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: nobody, HostID: os.Getgid(), Size: 1}},
		Credential:  &syscall.Credential{Uid: nobody, Gid: nobody, NoSetGroups: true},
	}
}

// Main runs the launcher when this process was started as one and never
// returns then; otherwise it returns at once. Every binary that starts tool
// hosts calls it first thing in main, and test binaries in TestMain.
func Main() {
	if len(os.Args) < 3 || os.Args[1] != launcherFlag {
		return
	}
	err := launch(os.Args[2])
	fmt.Fprintf(os.Stderr, "mirobody tool sandbox: %v\n", err)
	os.Exit(126)
}

// launch confines this process and execs the interpreter; it returns only
// on failure.
func launch(arg string) error {
	var sp spec
	if err := json.Unmarshal([]byte(arg), &sp); err != nil {
		return fmt.Errorf("reading the spec: %w", err)
	}
	if os.Getuid() == 0 || os.Geteuid() == 0 {
		return errors.New("refusing to run tools as uid 0")
	}
	if err := noCapabilities(); err != nil {
		return err
	}
	var rules []landlock.Rule
	add := func(paths []string, write bool) {
		for _, p := range paths {
			st, err := os.Stat(p)
			switch {
			case err != nil: // missing (or not ours to see): nothing to allow
			case st.IsDir() && write:
				rules = append(rules, landlock.RWDirs(p))
			case st.IsDir():
				rules = append(rules, landlock.RODirs(p))
			case write:
				rules = append(rules, landlock.RWFiles(p))
			default:
				rules = append(rules, landlock.ROFiles(p))
			}
		}
	}
	add(sp.RO, false)
	add(sp.RW, true)
	// Strict ABI 6: filesystem rights plus scoping of signals and abstract
	// UNIX sockets; the network is deliberately not handled. The ruleset is
	// enforced on this thread only, which then execs: the library's
	// all-threads path (psx) hangs as PID 1 of a new PID namespace in cgo
	// builds, and exec keeps the calling thread's credentials anyway.
	cfg := landlock.Config{HandledAccessFS: landlock.V6.HandledAccessFS, Scoped: landlock.V6.Scoped}
	fd, flags, err := cfg.NewRulesetFD(rules...)
	if err != nil {
		return fmt.Errorf("creating the landlock ruleset: %w", err)
	}
	if fd < 0 {
		return errors.New("landlock would enforce nothing")
	}
	runtime.LockOSThread() // never unlocked: this thread execs
	// no_new_privs: nothing exec'd from here on gains privileges (setuid
	// binaries, file capabilities); Landlock requires it without CAP_SYS_ADMIN.
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("setting no_new_privs: %w", err)
	}
	if err := llsyscall.LandlockRestrictSelf(fd, flags); err != nil {
		return fmt.Errorf("applying landlock: %w", err)
	}
	_ = unix.Close(fd)
	if err := syscall.Exec(sp.Exec, sp.Args, os.Environ()); err != nil {
		return fmt.Errorf("exec %s: %w", sp.Exec, err)
	}
	return nil
}

// noCapabilities checks that the launcher holds no capability in any set,
// which an unprivileged uid after exec never does; a service started with
// ambient or file capabilities would otherwise pass them on.
func noCapabilities() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("reading capabilities: %w", err)
	}
	for _, d := range data {
		if d.Effective != 0 || d.Permitted != 0 || d.Inheritable != 0 {
			return errors.New("the launcher holds capabilities; refusing to run tools with them")
		}
	}
	return nil
}
