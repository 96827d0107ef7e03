package main

import "syscall"

// inNewNamespaces makes the process start in a UTS namespace of its own, where it may name
// its host without renaming podrunner's, and with mount, in a mount namespace of its own,
// where a file mounted over /etc/hosts is the process's alone.
func inNewNamespaces(attr *syscall.SysProcAttr, mount bool) error {
	attr.Cloneflags |= syscall.CLONE_NEWUTS
	if mount {
		attr.Cloneflags |= syscall.CLONE_NEWNS
	}
	return nil
}

func setHostname(hostname string) error {
	return syscall.Sethostname([]byte(hostname))
}

// mountHosts bind-mounts hosts over /etc/hosts. The mounts are made private first, so
// that the bind does not propagate back to the host's /etc/hosts where / is shared (as
// systemd makes it).
func mountHosts(hosts string) error {
	if err := syscall.Mount("none", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		return err
	}
	return syscall.Mount(hosts, "/etc/hosts", "", syscall.MS_BIND, "")
}
