package proxy

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Conn is one side of a proxy session: JSON-RPC messages in and out.
//
// Only this package's connections implement it (NewStreamConn, Stdio,
// StartCommand and the sessions of HTTPHandler), because each one checks
// every frame strictly before it is decoded (docs/proxy.md, "Strict
// decoding"): the SDK's transports decode with encoding/json, and the proxy
// must judge exactly what the peer will read. Read returns a *FrameError
// for a refused frame and goes on reading; any other error ends the
// connection. Write and Close may be called concurrently with Read.
type Conn interface {
	Read(context.Context) (jsonrpc.Message, error)
	Write(context.Context, jsonrpc.Message) error
	Close() error
	// checksFrames marks the connections whose frames were checked.
	checksFrames()
}

// MaxFrame is the longest line a stream connection reads: the SDK's
// default (mcp.DefaultMaxLineLength). A longer line ends the connection.
const MaxFrame = mcp.DefaultMaxLineLength

// errFrameTooLarge ends a stream whose line passed MaxFrame.
var errFrameTooLarge = fmt.Errorf("a JSON-RPC frame is longer than %d bytes", MaxFrame)

// streamConn is newline-delimited JSON-RPC over a byte stream, as MCP's
// stdio transport specifies it: one message per line, no embedded newlines.
type streamConn struct {
	w       io.Writer
	closer  func() error
	writeMu sync.Mutex
	// br is the reader Read reads itself (newStreamConn), rc its Close,
	// readErr the error that ended it; else incoming carries the lines
	// readLines read.
	br       *bufio.Reader
	rc       io.Closer
	readErr  error
	incoming chan lineOrErr
	closed   chan struct{}
	once     sync.Once
	closeErr error
}

type lineOrErr struct {
	line []byte
	err  error
}

// NewStreamConn returns a Conn over newline-delimited JSON-RPC read from r
// and written to w; Close closes r, then w. Each line is checked strictly
// before it is decoded; lines of whitespace are skipped; JSON-RPC batches
// (a line holding an array) are refused.
func NewStreamConn(r io.ReadCloser, w io.WriteCloser) Conn {
	return newStreamConn(r, w, func() error {
		return errors.Join(r.Close(), w.Close())
	})
}

// Stdio returns the Conn over the process's stdin and stdout; Close closes
// stdin. A pipe or a socket on stdin is read through the runtime's poller
// (pollable), anything else as it is.
func Stdio() Conn {
	return stdio(os.Stdin, os.Stdout)
}

// stdio is Stdio over in and out.
func stdio(in, out *os.File) *streamConn {
	if r := pollable(in); r != nil {
		return newStreamConn(r, out, func() error { return errors.Join(r.Close(), in.Close()) })
	}
	return newStreamConn(in, out, in.Close)
}

// StartCommand starts cmd and returns the Conn over its stdin and stdout.
// Close closes its stdin and waits for it to exit: after terminate it gets
// SIGTERM, after another terminate SIGKILL.
func StartCommand(cmd *exec.Cmd, terminate time.Duration) (Conn, error) {
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	var waitOnce sync.Once
	var waitErr error
	exited := make(chan struct{})
	wait := func() {
		waitOnce.Do(func() {
			go func() {
				waitErr = cmd.Wait()
				close(exited)
			}()
		})
	}
	return newStreamConn(stdout, stdin, func() error {
		// As MCP's stdio shutdown says: close the server's input, wait,
		// then SIGTERM, then SIGKILL.
		err := stdin.Close()
		wait()
		for _, sig := range []os.Signal{nil, syscall.SIGTERM, os.Kill} {
			if sig != nil {
				cmd.Process.Signal(sig)
			}
			select {
			case <-exited:
				return errors.Join(err, waitErr)
			case <-time.After(terminate):
			}
		}
		return errors.New("the server process did not exit after SIGKILL")
	}), nil
}

// newStreamConn returns the connection over r and w. A reader whose Close
// ends a Read in progress (closeEnds) is read by Read itself, in the
// caller's goroutine: a frame goes from the read to its handling without
// a hand-over between goroutines. Any other reader is read by a goroutine
// of its own (readLines).
func newStreamConn(r io.Reader, w io.Writer, closer func() error) *streamConn {
	c := &streamConn{w: w, closer: closer, closed: make(chan struct{})}
	if rc, ok := closeEnds(r); ok {
		c.br, c.rc = bufio.NewReaderSize(r, 64<<10), rc
		return c
	}
	c.incoming = make(chan lineOrErr)
	go c.readLines(r)
	return c
}

// closeEnds reports whether closing r ends a Read of r in progress, and
// returns r's Close: true of a network connection and of a file the
// runtime's poller reads (a pipe of os/exec, a stdin made pollable), which
// alone take a read deadline.
func closeEnds(r io.Reader) (io.Closer, bool) {
	switch r := r.(type) {
	case net.Conn:
		return r, true
	case *os.File:
		return r, r.SetReadDeadline(time.Time{}) == nil
	}
	return nil, false
}

// readLines feeds the lines of r to Read until r ends or the connection
// closes. It leaks if r.Read never returns after Close (a stdin read as it
// is, not through the poller: see Stdio), as the SDK's reader does.
func (c *streamConn) readLines(r io.Reader) {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := readLine(br)
		if err == nil && len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		select {
		case c.incoming <- lineOrErr{line, err}:
		case <-c.closed:
			return
		}
		if err != nil {
			return
		}
	}
}

// readLine reads one line without its "\n" (or "\r\n"); a last line
// without a newline counts.
func readLine(br *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(line)+len(chunk) > MaxFrame+2 {
			return nil, errFrameTooLarge
		}
		line = append(line, chunk...)
		switch {
		case err == nil:
			line = bytes.TrimSuffix(line[:len(line)-1], []byte("\r"))
			return line, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(line) > 0:
			return line, nil
		default:
			return nil, err
		}
	}
}

func (c *streamConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	if c.br != nil {
		return c.readDirect(ctx)
	}
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.closed:
		return nil, io.EOF
	case l := <-c.incoming:
		if l.err != nil {
			return nil, l.err
		}
		return decodeFrame(l.line)
	}
}

// readDirect is Read of a connection whose Close ends a read in progress
// (newStreamConn): the reader is read here. The first error ends the
// reading for good; one that Close caused reads as io.EOF, as it does
// through readLines.
func (c *streamConn) readDirect(ctx context.Context) (jsonrpc.Message, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for c.readErr == nil {
		select {
		case <-c.closed:
			return nil, io.EOF
		default:
		}
		line, err := readLine(c.br)
		switch {
		case err != nil && (errors.Is(err, os.ErrClosed) || errors.Is(err, net.ErrClosed) || errors.Is(err, io.ErrClosedPipe)):
			c.readErr = io.EOF
		case err != nil:
			c.readErr = err
		case len(bytes.TrimSpace(line)) > 0:
			return decodeFrame(line)
		}
	}
	return nil, c.readErr
}

func (c *streamConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return fmt.Errorf("encoding a message: %w", err)
	}
	data = append(data, '\n')
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	select {
	case <-c.closed:
		return io.ErrClosedPipe
	default:
	}
	_, err = c.w.Write(data)
	return err
}

func (c *streamConn) Close() error {
	c.once.Do(func() {
		// Close the peer's side first: a server finishing its work still
		// answers, and Read still hands those answers over until it exits.
		c.closeErr = c.closer()
		close(c.closed)
		if c.rc != nil {
			// A reader the closer left open (a server that would not
			// exit keeps its stdout): Read must not wait on it.
			c.rc.Close()
		}
	})
	return c.closeErr
}

func (c *streamConn) checksFrames() {}

// checkedConn is a connection of the SDK whose every incoming frame
// HTTPHandler checked before handing it over (the POST bodies).
type checkedConn struct{ mcp.Connection }

func (checkedConn) checksFrames() {}
