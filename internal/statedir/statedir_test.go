package statedir_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/mcpx/mcpx-policy/internal/statedir"
	"github.com/mcpx/mcpx-policy/internal/trust"
)

// The ledger's hostile-state-dir tests (internal/ledger/hostile_test.go)
// and the approval store's cover the checks through their callers; these
// pin what the package itself promises.

func TestCheck(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	if ok, err := statedir.New(filepath.Join(root, "missing")).Check(); ok || err != nil {
		t.Fatalf("a missing dir: %v, %v; want false, nil", ok, err)
	}
	file := filepath.Join(root, "file")
	os.WriteFile(file, nil, 0o600)
	var se *statedir.Error
	if _, err := statedir.New(file).Check(); !errors.As(err, &se) || se.Hint == "" {
		t.Fatalf("a file as the dir: %v; want an *Error with a hint", err)
	}
	open := filepath.Join(root, "open")
	os.Mkdir(open, 0o700)
	os.Chmod(open, 0o770)
	if _, err := statedir.New(open).Check(); !errors.Is(err, statedir.ErrUnsafe) {
		t.Fatalf("a group-writable dir: %v; want ErrUnsafe", err)
	}
	d := statedir.New(filepath.Join(root, "new", "state"))
	if err := d.Make(); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(d.Path()); err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("Make: %v, %v; want a 0700 dir", st, err)
	}
}

func TestOpenRefusesWhatIsNotAPrivateRegularFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	d := statedir.New(dir)
	os.Symlink(filepath.Join(dir, "elsewhere"), filepath.Join(dir, "link"))
	unix.Mkfifo(filepath.Join(dir, "fifo"), 0o600)
	os.WriteFile(filepath.Join(dir, "shared"), nil, 0o600)
	os.Chmod(filepath.Join(dir, "shared"), 0o666)
	for name, want := range map[string]error{"link": statedir.ErrNotRegular, "fifo": statedir.ErrNotRegular, "shared": statedir.ErrUnsafe} {
		if _, _, err := d.Open(name, unix.O_RDONLY); !errors.Is(err, want) {
			t.Errorf("Open(%s): %v; want %v", name, err, want)
		}
		if _, _, err := d.CheckFile(name); !errors.Is(err, want) {
			t.Errorf("CheckFile(%s): %v; want %v", name, err, want)
		}
	}
	if _, _, err := d.Open("missing", unix.O_RDONLY); err != os.ErrNotExist {
		t.Errorf("Open(missing): %v; want os.ErrNotExist", err)
	}
}

func TestReplaceReadCappedAndTemps(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	d := statedir.New(dir)
	unlock, err := d.Lock("x.lock")
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	if _, err := d.Replace("x.json", []byte("0123456789")); err != nil {
		t.Fatal(err)
	}
	f, st, err := d.Open("x.json", unix.O_RDONLY)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if st.Mode&0o777 != 0o600 {
		t.Errorf("mode %o, want 600", st.Mode&0o777)
	}
	var big *trust.TooBigError
	if _, err := trust.ReadCapped(f, st.Size, 9); !errors.As(err, &big) || big.Size != 10 {
		t.Fatalf("ReadCapped over the cap: %v", err)
	}
	if b, err := trust.ReadCapped(f, st.Size, 10); err != nil || string(b) != "0123456789" {
		t.Fatalf("ReadCapped at the cap: %q, %v", b, err)
	}
	for _, name := range []string{".x.json123", ".x.json", ".x.jsonabc", ".y.json1"} {
		os.WriteFile(filepath.Join(dir, name), nil, 0o600)
	}
	if n := d.RemoveStaleTemps("x.json"); n != 1 {
		t.Fatalf("removed %d temps, want 1", n)
	}
	for name, want := range map[string]bool{".x.json123": false, ".x.json": true, ".x.jsonabc": true, ".y.json1": true} {
		if _, err := os.Stat(filepath.Join(dir, name)); (err == nil) != want {
			t.Errorf("%s present = %v, want %v", name, err == nil, want)
		}
	}
}
