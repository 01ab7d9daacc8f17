// Package wiretest checks the message types of contract packages against
// golden JSON files, so that a renamed or retyped field, which would break
// the other side of the bus, fails a test instead.
package wiretest

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mirobody/mirobody-go/services/wire"
)

// Update is the -update flag of every test binary that imports wiretest:
// rewrite the golden files instead of comparing them. A test package with
// golden files of its own reads this flag rather than defining another.
var Update = flag.Bool("update", false, "rewrite the golden files in testdata")

// Golden checks every message type of contracts (each once, however many
// subjects carry it) against dir/<package>.<Type>.json, both ways: a
// sample (Fill) encodes to exactly the golden bytes, and the golden
// decodes, with unknown fields refused, back to the sample. A message
// type without a golden file, or a golden file no message type uses,
// fails. With -update the golden files are written instead.
func Golden(t *testing.T, dir string, contracts []wire.Contract) {
	t.Helper()
	seen := map[string]bool{}
	for _, c := range contracts {
		for _, msg := range c.Messages() {
			name := reflect.TypeOf(msg).Elem().String()
			if seen[name] {
				continue
			}
			seen[name] = true
			t.Run(name, func(t *testing.T) { checkGolden(t, filepath.Join(dir, name+".json"), msg) })
		}
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.*.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if name := strings.TrimSuffix(filepath.Base(f), ".json"); !seen[name] {
			t.Errorf("%s: no message type of the contract is %s; delete the file", f, name)
		}
	}
}

// checkGolden fills msg (a pointer) and compares it with the file golden.
func checkGolden(t *testing.T, golden string, msg any) {
	t.Helper()
	Fill(msg)
	got, err := json.MarshalIndent(msg, "", "  ")
	if err != nil {
		t.Fatalf("encoding the sample: %v", err)
	}
	got = append(got, '\n')
	if *Update {
		if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("reading the golden file (go test -update writes it): %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("the sample encodes differently from %s (go test -update rewrites it after a deliberate change):\n got: %s\nwant: %s", golden, got, want)
	}
	// Compact first: raw JSON fields keep the bytes they are given.
	var compact bytes.Buffer
	if err := json.Compact(&compact, want); err != nil {
		t.Fatalf("%s: %v", golden, err)
	}
	back := reflect.New(reflect.TypeOf(msg).Elem())
	dec := json.NewDecoder(&compact)
	dec.DisallowUnknownFields()
	if err := dec.Decode(back.Interface()); err != nil {
		t.Fatalf("decoding %s: %v", golden, err)
	}
	if !reflect.DeepEqual(back.Interface(), msg) {
		t.Errorf("%s decodes to %+v, want %+v", golden, back.Elem().Interface(), reflect.ValueOf(msg).Elem().Interface())
	}
}

// Fill sets every exported field that JSON carries of the value v points
// to, recursively, to a deterministic non-zero value: strings name their
// field, numbers count up, slices and maps get one element, pointers
// point to a filled value, raw JSON is a small object and times are whole
// seconds in UTC. Every field then appears in the encoding, omitempty or
// not.
func Fill(v any) {
	f := filler{}
	f.fill(reflect.ValueOf(v).Elem(), "value")
}

// filler counts the values it sets, so that no two fields look alike.
type filler struct{ n int }

var (
	timeType = reflect.TypeFor[time.Time]()
	rawType  = reflect.TypeFor[json.RawMessage]()
)

func (f *filler) fill(v reflect.Value, name string) {
	f.n++
	switch {
	case v.Type() == timeType:
		v.Set(reflect.ValueOf(time.Date(2026, 1, 2, 3, 4, f.n%60, 0, time.UTC)))
		return
	case v.Type() == rawType:
		v.SetBytes(fmt.Appendf(nil, `{"%s":%d}`, name, f.n))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(fmt.Sprintf("%s-%d", name, f.n))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(f.n))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(f.n))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(float64(f.n) + 0.5)
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		f.fill(p.Elem(), name)
		v.Set(p)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 1, 1)
		f.fill(s.Index(0), name)
		v.Set(s)
	case reflect.Array:
		for i := range v.Len() {
			f.fill(v.Index(i), name)
		}
	case reflect.Map:
		m := reflect.MakeMapWithSize(v.Type(), 1)
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		f.fill(k, name+"-key")
		f.fill(e, name)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.Struct:
		for i := range v.NumField() {
			sf := v.Type().Field(i)
			// JSON promotes the fields of an embedded struct even when
			// its type is unexported.
			promoted := sf.Anonymous && sf.Type.Kind() == reflect.Struct
			if !sf.IsExported() && !promoted || sf.Tag.Get("json") == "-" {
				continue
			}
			f.fill(v.Field(i), strings.ToLower(sf.Name))
		}
	default:
		panic(fmt.Sprintf("wiretest: cannot fill %s (%s) of kind %s", name, v.Type(), v.Kind()))
	}
}

// Served checks that the running service answers exactly the endpoints of
// contracts under its name (besides sys.ping and sys.info), as its
// sys.info reports them: a contract endpoint without a handler, or a
// handler without a contract, fails.
func Served(t *testing.T, c *wire.Client, service string, contracts ...[]wire.Contract) {
	t.Helper()
	info, err := wire.SysInfo(service).Call(t.Context(), c, &wire.Empty{})
	if err != nil {
		t.Fatalf("asking %s for its endpoints: %v", service, err)
	}
	served := map[string]bool{}
	for _, s := range info.Endpoints {
		served[s] = true
	}
	want := map[string]bool{wire.SysPing(service).Subject: true, wire.SysInfo(service).Subject: true}
	for _, list := range contracts {
		for _, ct := range list {
			if ct.Requested() && strings.HasPrefix(ct.SubjectName(), service+".") {
				want[ct.SubjectName()] = true
			}
		}
	}
	for s := range want {
		if !served[s] {
			t.Errorf("%s does not serve %s", service, s)
		}
	}
	for s := range served {
		if !want[s] {
			t.Errorf("%s serves %s, which no contract lists", service, s)
		}
	}
}
