//go:build !linux

package proxy

import "os"

// pollable returns nil where the proxy does not make a pollable copy of
// stdin: it is read as it is (stdin_linux.go).
func pollable(*os.File) interface {
	Read([]byte) (int, error)
	Close() error
} {
	return nil
}
