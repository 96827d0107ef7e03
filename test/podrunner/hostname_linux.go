package main

import "syscall"

// inNewUTSNamespace makes the process start in a UTS namespace of its own, where it may
// name its host without renaming podrunner's.
func inNewUTSNamespace(attr *syscall.SysProcAttr) error {
	attr.Cloneflags |= syscall.CLONE_NEWUTS
	return nil
}

func setHostname(hostname string) error {
	return syscall.Sethostname([]byte(hostname))
}
