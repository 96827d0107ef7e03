package main

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
)

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

// mountServiceAccountDir bind-mounts dir at serviceAccountPath, mounts made private first as
// for mountHosts. A host that is no pod has no such directory, and making one would change
// the host: where it is missing, the process gets a /var/run of its own first (an empty
// tmpfs, hiding the host's, which a pod's program does not read), in which it is made.
func mountServiceAccountDir(dir string) error {
	if err := syscall.Mount("none", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		return err
	}
	if _, err := os.Stat(serviceAccountPath); errors.Is(err, os.ErrNotExist) {
		if err := syscall.Mount("tmpfs", filepath.Dir(filepath.Dir(filepath.Dir(serviceAccountPath))), "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "mode=0755"); err != nil {
			return err
		}
		if err := os.MkdirAll(serviceAccountPath, 0o755); err != nil {
			return err
		}
	}
	return syscall.Mount(dir, serviceAccountPath, "", syscall.MS_BIND, "")
}
