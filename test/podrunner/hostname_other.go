//go:build !linux

package main

import (
	"errors"
	"fmt"
	"syscall"
)

// inNewNamespaces fails: UTS and mount namespaces are Linux's, so elsewhere processes keep
// the host's hostname and /etc/hosts.
func inNewNamespaces(*syscall.SysProcAttr, bool) error {
	return fmt.Errorf("UTS and mount namespaces are Linux's: %w", errors.ErrUnsupported)
}

func setHostname(string) error {
	return fmt.Errorf("setting the hostname: %w", errors.ErrUnsupported)
}

func mountHosts(string) error {
	return fmt.Errorf("mounting over /etc/hosts: %w", errors.ErrUnsupported)
}

func mountServiceAccountDir(string) error {
	return fmt.Errorf("mounting at the ServiceAccount path: %w", errors.ErrUnsupported)
}
