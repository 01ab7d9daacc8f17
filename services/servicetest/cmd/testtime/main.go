// Command testtime runs `go test -json`, shows its output as plain `go test`
// would, and keeps the events; `testtime -report` then prints how long each
// workspace module's tests ran. `make test` uses it so that CI logs end with
// per-module timings (which module to speed up, and whether the race
// detector is where the time goes).
//
//	testtime -o events.json -- go test -json ./pkg/...   (exit code of go test)
//	testtime -report events.json [more.json...]
//
// gotestsum does more, but it is one more tool for a fresh machine to fetch,
// and the table below is all `make test` needs.
package main

import (
	"bufio"
	"cmp"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

func main() {
	out := flag.String("o", "", "append the go test -json events to this file")
	report := flag.Bool("report", false, "print per-module timings of the event files given as arguments")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: testtime -o FILE -- go test -json ...\n       testtime -report FILE...")
	}
	flag.Parse()
	if *report {
		if err := printReport(os.Stdout, flag.Args()); err != nil {
			fmt.Fprintf(os.Stderr, "testtime: %v\n", err)
			os.Exit(1)
		}
		return
	}
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	os.Exit(run(flag.Args(), *out))
}

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Time    time.Time
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
	// ImportPath is set on build-output and build-fail events.
	ImportPath string
}

// run runs args, echoes the output of its events to stdout, appends the
// raw events to path, and returns the command's exit code.
func run(args []string, path string) int {
	var sink io.Writer = io.Discard
	if path != "" {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			fmt.Fprintf(os.Stderr, "testtime: %v\n", err)
			return 1
		}
		defer f.Close()
		sink = f
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stderr = os.Stdin, os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintf(os.Stderr, "testtime: %v\n", err)
		return 1
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "testtime: %v\n", err)
		return 1
	}
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64<<10), 16<<20) // one event per line; test output lines can be long
	var out plainOutput
	for sc.Scan() {
		line := sc.Bytes()
		var ev event
		if json.Unmarshal(line, &ev) != nil {
			// Not an event (go vet or the go command itself): show it as is.
			fmt.Printf("%s\n", line)
			continue
		}
		out.add(os.Stdout, ev)
		fmt.Fprintf(sink, "%s\n", line)
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintf(os.Stderr, "testtime: reading go test output: %v\n", err)
	}
	if err := cmd.Wait(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		fmt.Fprintf(os.Stderr, "testtime: %v\n", err)
		return 1
	}
	return 0
}

// plainOutput turns the events back into what plain `go test` shows: the
// output of failed tests, build errors and one line per package. (-json
// runs every test verbosely, so passing tests' output is dropped here.)
type plainOutput struct {
	tests map[string][]string
}

func (o *plainOutput) add(w io.Writer, ev event) {
	if o.tests == nil {
		o.tests = map[string][]string{}
	}
	key := ev.Package + " " + ev.Test
	switch {
	case ev.Action == "build-output":
		fmt.Fprint(w, ev.Output)
	case ev.Test != "" && ev.Action == "output":
		o.tests[key] = append(o.tests[key], ev.Output)
	case ev.Test != "" && ev.Action == "fail":
		fmt.Fprint(w, strings.Join(o.tests[key], ""))
		delete(o.tests, key)
	case ev.Test != "" && (ev.Action == "pass" || ev.Action == "skip"):
		delete(o.tests, key)
	case ev.Action == "output" && ev.Output != "PASS\n":
		fmt.Fprint(w, ev.Output)
	case ev.Action == "fail":
		// A package that panicked or timed out: whatever its running
		// tests printed explains it.
		for k, lines := range o.tests {
			if strings.HasPrefix(k, ev.Package+" ") {
				fmt.Fprint(w, strings.Join(lines, ""))
				delete(o.tests, k)
			}
		}
	}
}

// pkgTime is the outcome of one package.
type pkgTime struct {
	name    string
	elapsed float64
	result  string
	tests   int
}

// printReport prints one line per workspace module: packages, top-level
// tests, the summed run time of its test binaries, and its slowest package.
func printReport(w io.Writer, paths []string) error {
	modules, err := workspaceModules()
	if err != nil {
		return err
	}
	pkgs := map[string]*pkgTime{}
	var first, last time.Time
	for _, path := range paths {
		if err := readEvents(path, func(ev event) {
			if ev.Time.IsZero() || ev.Package == "" {
				return
			}
			if first.IsZero() || ev.Time.Before(first) {
				first = ev.Time
			}
			last = maxTime(last, ev.Time)
			p := pkgs[ev.Package]
			if p == nil {
				p = &pkgTime{name: ev.Package}
				pkgs[ev.Package] = p
			}
			switch {
			case ev.Test == "" && (ev.Action == "pass" || ev.Action == "fail" || ev.Action == "skip"):
				p.elapsed += ev.Elapsed
				p.result = ev.Action
			case ev.Test != "" && !strings.Contains(ev.Test, "/") && (ev.Action == "pass" || ev.Action == "fail"):
				p.tests++
			}
		}); err != nil {
			return err
		}
	}
	type modTime struct {
		pkgTime
		pkgs    int
		slowest *pkgTime
		failed  int
	}
	byMod := map[string]*modTime{}
	for _, p := range pkgs {
		if p.result == "skip" && p.tests == 0 {
			continue // no test files
		}
		m := moduleOf(modules, p.name)
		mt := byMod[m]
		if mt == nil {
			mt = &modTime{pkgTime: pkgTime{name: m}}
			byMod[m] = mt
		}
		mt.pkgs++
		mt.tests += p.tests
		mt.elapsed += p.elapsed
		if p.result == "fail" {
			mt.failed++
		}
		if mt.slowest == nil || p.elapsed > mt.slowest.elapsed {
			mt.slowest = p
		}
	}
	names := make([]string, 0, len(byMod))
	for m := range byMod {
		names = append(names, m)
	}
	slices.SortFunc(names, func(a, b string) int { return cmp.Compare(byMod[b].elapsed, byMod[a].elapsed) })
	fmt.Fprintf(w, "\ntest run time per module (test binaries only, not compiling; packages run in parallel, so the sum exceeds the wall time %s):\n",
		last.Sub(first).Round(time.Second))
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "module\tpackages\ttests\tfailed\trun time\tslowest package")
	var total float64
	for _, m := range names {
		mt := byMod[m]
		total += mt.elapsed
		slowest := "." + strings.TrimPrefix(mt.slowest.name, m)
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%.1fs\t%s %.1fs\n", shortName(modules, m), mt.pkgs, mt.tests, mt.failed, mt.elapsed,
			slowest, mt.slowest.elapsed)
	}
	fmt.Fprintf(tw, "total\t\t\t\t%.1fs\t\n", total)
	return tw.Flush()
}

// readEvents calls fn for every event of the file at path.
func readEvents(path string, fn func(event)) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("opening events: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var ev event
		if json.Unmarshal(sc.Bytes(), &ev) == nil {
			fn(ev)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	return nil
}

// workspaceModules lists the module paths of the current workspace.
func workspaceModules() ([]string, error) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Path}}").Output()
	if err != nil {
		return nil, fmt.Errorf("listing the workspace modules: %w", err)
	}
	return strings.Fields(string(out)), nil
}

// moduleOf is the longest module path that is pkg or a parent of it.
func moduleOf(modules []string, pkg string) string {
	best := pkg
	n := -1
	for _, m := range modules {
		if (pkg == m || strings.HasPrefix(pkg, m+"/")) && len(m) > n {
			best, n = m, len(m)
		}
	}
	return best
}

// shortName drops the prefix every module shares, so that the table says
// "gateway" rather than "github.com/mirobody/mirobody-go/gateway".
func shortName(modules []string, m string) string {
	prefix := m
	for _, root := range modules {
		for !strings.HasPrefix(root, prefix) {
			prefix = prefix[:len(prefix)-1]
		}
	}
	if i := strings.LastIndex(prefix, "/"); i >= 0 {
		return m[i+1:]
	}
	return m
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
