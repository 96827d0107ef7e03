//go:build !linux

package main

import (
	"errors"
	"fmt"
	"syscall"
)

// inNewUTSNamespace fails: UTS namespaces are Linux's, so elsewhere processes keep the
// host's hostname.
func inNewUTSNamespace(*syscall.SysProcAttr) error {
	return fmt.Errorf("UTS namespaces are Linux's: %w", errors.ErrUnsupported)
}

func setHostname(string) error {
	return fmt.Errorf("setting the hostname: %w", errors.ErrUnsupported)
}
