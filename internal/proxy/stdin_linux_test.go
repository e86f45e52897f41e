package proxy

import (
	"context"
	"errors"
	"os"
	"syscall"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"golang.org/x/sys/unix"
)

// TestStdinReadThroughThePoller: a pipe or a socket on stdin is read
// through the runtime's poller, so that Close ends the read in progress
// (nothing is left reading the client's input: a write to it then fails),
// and the descriptor of a pipe the process inherited keeps its flags
// (blocking): a parent sharing it sees nothing change.
func TestStdinReadThroughThePoller(t *testing.T) {
	t.Parallel()
	devNull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer devNull.Close()
	for _, kind := range []string{"pipe", "socket"} {
		t.Run(kind, func(t *testing.T) {
			var fds [2]int
			if kind == "pipe" {
				err = unix.Pipe2(fds[:], unix.O_CLOEXEC)
			} else {
				fds, err = unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
			}
			if err != nil {
				t.Fatal(err)
			}
			in, client := os.NewFile(uintptr(fds[0]), "stdin"), os.NewFile(uintptr(fds[1]), "client")
			defer client.Close()
			c := stdio(in, devNull)
			if _, err := client.Write([]byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n")); err != nil {
				t.Fatal(err)
			}
			msg, err := c.Read(context.Background())
			if req, ok := msg.(*jsonrpc.Request); err != nil || !ok || req.Method != "ping" {
				t.Fatalf("Read = %v, %v; want the ping", msg, err)
			}
			if kind == "pipe" {
				flags, err := unix.FcntlInt(in.Fd(), unix.F_GETFL, 0)
				if err != nil || flags&unix.O_NONBLOCK != 0 {
					t.Fatalf("the inherited pipe's flags = %#x, %v; want it left blocking", flags, err)
				}
			}
			// The line reader is now blocked reading the next frame.
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			if _, err := client.Write([]byte("{}\n")); !errors.Is(err, syscall.EPIPE) {
				t.Fatalf("writing to the client's end after Close: %v; want EPIPE (no reader left)", err)
			}
		})
	}
}
